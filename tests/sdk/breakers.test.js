// The breakers fed by the front: a blind retry loop trips the task's loop
// breaker; a provider's 429 opens the resource's breaker for every key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture } from './harness.js';

const f = fixture({
  policies: {
    'task:*': { breaker: { loop: { repeats: 3, window_ms: 60000 }, open_ms: 30000 } },
    'resource:*': { breaker: { errors: { ratio: 0.5, min_calls: 100, window_ms: 10000 }, open_ms: 30000 } },
  },
});

function post(key, body, headers = {}) {
  return fetch(`${f.brake.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

test('the same body sent again and again trips the loop breaker', async () => {
  const body = { model: 'fake-ok', max_tokens: 5, messages: [{ role: 'user', content: 'again' }] };
  const statuses = [];
  for (let i = 0; i < 5; i += 1) {
    const res = await post('bk-alice-1', body, { 'x-brake-task': 'looper' });
    statuses.push(res.status);
    if (res.status === 429) {
      const err = await res.json();
      assert.equal(err.error.code, 'breaker_open');
      assert.match(err.error.message, /loop/);
      assert.ok(Number(res.headers.get('retry-after')) > 0);
    } else {
      await res.arrayBuffer();
    }
  }
  assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
  // Another task of the same user is not stopped by it.
  const other = await post('bk-alice-1', body, { 'x-brake-task': 'fresh' });
  assert.equal(other.status, 200);
  await other.arrayBuffer();
});

test("a provider's 429 opens the resource's breaker for every key using it", async () => {
  const res = await post('bk-alice-1', { model: 'fake-429', max_tokens: 5,
                                         messages: [{ role: 'user', content: 'a' }] });
  assert.equal(res.status, 429);  // the provider's own answer, passed on
  assert.equal((await res.json()).error.message, 'slow down');
  // bob, another key, calls the same resource: brake answers for the provider.
  const calls = f.upstream.calls.length;
  const bob = await post('bk-bob-0001', { model: 'fake-429', max_tokens: 5,
                                          messages: [{ role: 'user', content: 'b' }] });
  assert.equal(bob.status, 429);
  const err = await bob.json();
  assert.equal(err.error.code, 'breaker_open');
  assert.match(err.error.message, /throttled/);
  assert.equal(f.upstream.calls.length, calls, 'the provider was not called again');
  const status = await f.brake.op({ op: 'status', resource: 'openai/fake-429' });
  assert.equal(status.breakers[0].cause, 'throttled');
});
