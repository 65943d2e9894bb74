// Held is not spent, through the front with the official SDK: 40 agents
// streaming at once on a 1 usd cap, asking about 2.5 times what it holds,
// wait while calls in flight hold the cap (no insufficient_quota then), and
// spend at least 95 % of it, never more.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { fixture } from './harness.js';

// A call reserves about 0.04 usd (its prompt's ceiling and max_tokens 20
// at the dearer rate) and spends about 0.011 (the usage the fake reports).
const f = fixture({
  prices: { 'fake-ok': { input_usd_per_mtok: 300, output_usd_per_mtok: 600 },
            'fake-slow': { input_usd_per_mtok: 300, output_usd_per_mtok: 600 } },
  http: { keys: { 'bk-team-001': { user: 'team' }, 'bk-solo-001': { user: 'solo' } } },
  policies: {
    'user:team': { limits: [
      { name: 'cap', resource: 'usd', algorithm: 'quota', limit: 1.0, period: 'total' }] },
    'user:solo': { limits: [
      { name: 'cap', resource: 'usd', algorithm: 'quota', limit: 0.07, period: 'total' }] },
  },
});

function messages(i) {
  return [{ role: 'user', content: `agent step ${i} ${'x'.repeat(i % 23)}` }];
}

test('40 streaming agents on a 1 usd cap: at least 95 % spent, never more, '
     + 'no insufficient_quota while the cap is only held', async (t) => {
  const client = new OpenAI({ apiKey: 'bk-team-001', baseURL: `${f.brake.base}/v1`,
                              maxRetries: 0 });
  const answers = { ok: 0, reserved: 0, spent: [], other: [] };
  const agent = async (a) => {
    for (let step = 0; step < 6; step += 1) {
      const i = a * 6 + step;
      try {
        const stream = await client.chat.completions.create({
          model: 'fake-ok', stream: true, max_tokens: 20, messages: messages(i) });
        for await (const chunk of stream) void chunk;
        answers.ok += 1;
      } catch (e) {
        if (!(e instanceof OpenAI.RateLimitError)) {
          answers.other.push(String(e));
        } else if (e.code === 'cost_cap') {
          answers.spent.push({ type: e.type, message: e.message,
                               retry: e.headers?.get('x-should-retry') });
        } else if (e.code === 'reserved') {
          answers.reserved += 1;
        } else {
          answers.other.push(`${e.code}: ${e.message}`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 40 }, (_, a) => agent(a)));
  assert.deepEqual(answers.other, []);
  assert.equal(answers.reserved, 0, 'a held cap made a caller wait, not fail');
  const status = await f.brake.op({ op: 'status', user: 'team' });
  const cap = status.limits.find((l) => l.name === 'cap');
  const detail = JSON.stringify({ ok: answers.ok, spent: answers.spent.length, cap });
  t.diagnostic(detail);
  assert.ok(status.spend.usd <= 1.0 + 1e-9, detail);
  assert.ok(status.spend.usd >= 0.95, detail);
  assert.equal(cap.held, 0, detail);
  // Demand was about 2.5 caps: the rest were refused as spent, each when
  // what was left unspent could not hold its reservation.
  assert.ok(answers.spent.length > 0, detail);
  for (const s of answers.spent) {
    assert.equal(s.type, 'insufficient_quota');
    assert.equal(s.retry, 'false');  // a total cap never comes back
    const m = /would reserve ([0-9.]+) usd against ([0-9.]+) usd left unspent/.exec(s.message);
    assert.ok(m, s.message);
    assert.ok(Number(m[2]) < Number(m[1]), s.message);
  }
});

test('a held cap answers reserved at once with x-brake-wait-ms: 0, and '
     + 'waits for the settlement without it', async () => {
  // 0.07 usd: one call in flight (0.046) holds most of it.
  const base = `${f.brake.base}/v1/chat/completions`;
  const post = (body, headers = {}) => fetch(base, { method: 'POST',
    headers: { authorization: 'Bearer bk-solo-001', 'content-type': 'application/json',
               ...headers },
    body: JSON.stringify(body) });
  const slow = post({ model: 'fake-slow', max_tokens: 20, messages: messages(1) });
  // Wait until the slow call holds its reservation.
  for (let i = 0; i < 100; i += 1) {
    const s = await f.brake.op({ op: 'status', user: 'solo' });
    if (s.reserved.requests === 1) break;
    await new Promise((ok) => setTimeout(ok, 10));
  }
  const now = await post({ model: 'fake-ok', max_tokens: 20, messages: messages(2) },
                         { 'x-brake-wait-ms': '0' });
  assert.equal(now.status, 429);
  assert.equal(now.headers.get('x-should-retry'), 'true');
  assert.ok(Number(now.headers.get('retry-after')) <= 60);
  const body = await now.json();
  assert.equal(body.error.code, 'reserved');
  assert.equal(body.error.type, 'rate_limit_exceeded');
  assert.match(body.error.message, /held by calls in flight/);

  const bad = await post({ model: 'fake-ok', messages: messages(3) },
                         { 'x-brake-wait-ms': 'soon' });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error.message, /x-brake-wait-ms/);

  // Without the header (http.wait_ms, 30 s) the call waits for the slow
  // one to settle, then goes through.
  const waited = await post({ model: 'fake-ok', max_tokens: 20, messages: messages(4) });
  assert.equal(waited.status, 200, await waited.clone().text());
  await waited.json();
  assert.equal((await slow).status, 200);
});
