// The provider misbehaving: a stream it breaks, a 5xx, an unreachable
// f.upstream. The client gets what its SDK expects; the lease is settled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Braked, fixture, freePort } from './harness.js';

const f = fixture();

async function settled(user) {
  for (let i = 0; i < 100; i += 1) {
    const s = await f.brake.op({ op: 'status', user });
    if (s.reserved.requests === 0) return s;
    await new Promise((ok) => setTimeout(ok, 20));
  }
  throw new Error(`${user} still holds a lease`);
}

test('a stream the provider breaks ends with an error the SDKs raise, settled as error', async () => {
  const client = new OpenAI({ apiKey: 'bk-alice-1', baseURL: `${f.brake.base}/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'fake-broken', stream: true, max_tokens: 20,
    messages: [{ role: 'user', content: 'this will break, promise' }] });
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  }, (e) => e instanceof OpenAI.APIError && /stream broke/.test(e.message));
  assert.equal(text, 'Hello');  // what came before the break was passed on
  const s = await settled('alice');
  assert.equal(s.reserved.tokens, 0);
  const metrics = (await f.brake.op({ op: 'metrics' })).text;
  assert.match(metrics, /brake_front_streams_cut_total\{upstream="openai",by="upstream"\} 1/);
  assert.match(metrics, /brake_front_tokens_settled_total\{upstream="openai",kind="output",source="estimated"\} 5/);

  const anthropic = new Anthropic({ apiKey: 'bk-alice-1', baseURL: f.brake.base, maxRetries: 0 });
  await assert.rejects(
    anthropic.messages.stream({ model: 'fake-broken', max_tokens: 20,
                                messages: [{ role: 'user', content: 'this will break, promise' }] })
      .finalMessage(),
    (e) => /stream broke/.test(String(e.message ?? e)));
  await settled('alice');
});

test("a provider's 5xx is passed on and settled at nothing", async () => {
  const client = new OpenAI({ apiKey: 'bk-bob-0001', baseURL: `${f.brake.base}/v1`, maxRetries: 0 });
  await assert.rejects(client.chat.completions.create({ model: 'fake-5xx', max_tokens: 5, messages: [] }),
                       (e) => e instanceof OpenAI.InternalServerError);
  const s = await settled('bob');
  assert.equal(s.spend.tokens, 0);
  assert.equal(s.spend.requests, 1);
});

test('an unreachable upstream is 502, and the lease is settled', async () => {
  const port = await freePort();  // nothing listens there
  const lonely = await new Braked({ url: `http://127.0.0.1:${port}` }).start();
  try {
    const client = new OpenAI({ apiKey: 'bk-alice-1', baseURL: `${lonely.base}/v1`, maxRetries: 0 });
    await assert.rejects(client.chat.completions.create({ model: 'fake-ok', max_tokens: 5, messages: [] }),
                         (e) => e instanceof OpenAI.APIError && e.status === 502);
    const s = await lonely.op({ op: 'status', user: 'alice' });
    assert.deepEqual(s.reserved, { requests: 0, tokens: 0, usd: 0 });
  } finally {
    assert.equal(await lonely.stop(), 0);
  }
});
