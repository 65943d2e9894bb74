// The official SDKs through brake's front: calls, streams, and brake's 429
// recognised by their error types and honoured by their own retries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { fakeUsage, fixture } from './harness.js';

// alice has a request limit, so that answers name it (x-ratelimit-*).
const f = fixture({ policies: { 'user:alice': { limits: [
  { name: 'rpm', resource: 'requests', algorithm: 'fixed_window', limit: 1000, window_ms: 60000 }] } } });

const openai = () => new OpenAI({ apiKey: 'bk-alice-1', baseURL: `${f.brake.base}/v1`, maxRetries: 0 });
const anthropic = () => new Anthropic({ apiKey: 'bk-alice-1', baseURL: f.brake.base, maxRetries: 0 });

test('openai: a chat completion through brake, settled from its usage', async () => {
  const before = (await f.brake.op({ op: 'status', user: 'alice' })).spend.tokens;
  const messages = [{ role: 'user', content: 'hello from the sdk' }];
  const { data, response } = await openai().chat.completions
    .create({ model: 'fake-ok', messages }).withResponse();
  assert.equal(data.choices[0].message.content, 'Hello!');
  const u = fakeUsage({ messages });
  assert.equal(data.usage.prompt_tokens, u.input);
  assert.ok(Number(response.headers.get('x-brake-reserved-usd')) > 0);
  assert.ok(response.headers.get('x-brake-overhead-ms') !== null);
  // The tightest request limit: its capacity and what it has left.
  const limit = Number(response.headers.get('x-ratelimit-limit-requests'));
  const left = Number(response.headers.get('x-ratelimit-remaining-requests'));
  assert.equal(limit, 1000);
  assert.ok(left >= 0 && left < limit, `${limit} ${left}`);
  // The provider got brake's output ceiling and its own key, not the agent's.
  const call = f.upstream.calls.at(-1);
  assert.equal(call.body.max_completion_tokens, 50);
  assert.equal(call.headers.authorization, 'Bearer sk-upstream-openai');
  const after = (await f.brake.op({ op: 'status', user: 'alice' })).spend.tokens;
  assert.equal(after - before, u.input + u.output);
});

test('openai: a stream passes through, its usage chunk removed unless asked', async () => {
  const messages = [{ role: 'user', content: 'stream it' }];
  const stream = await openai().chat.completions.create({ model: 'fake-ok', messages, stream: true });
  let text = '';
  let usageChunks = 0;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usageChunks += 1;
  }
  assert.ok(text.startsWith('Hel'));
  assert.equal(usageChunks, 0);
  assert.equal(f.upstream.calls.at(-1).body.stream_options.include_usage, true);
  const asked = await openai().chat.completions.create({
    model: 'fake-ok', messages, stream: true, stream_options: { include_usage: true } });
  let usage = null;
  for await (const chunk of asked) if (chunk.usage) usage = chunk.usage;
  assert.deepEqual([usage.prompt_tokens, usage.completion_tokens],
                   Object.values(fakeUsage({ messages })));
});

test('openai: the Responses API, whole and streamed, settled from its usage', async () => {
  const status = async () => (await f.brake.op({ op: 'status', user: 'alice' })).spend.tokens;
  const input = 'respond to this';
  const u = fakeUsage({ input });
  const before = await status();
  const whole = await openai().responses.create({ model: 'fake-ok', input });
  assert.equal(whole.output_text, 'Hello!');
  assert.equal(whole.usage.input_tokens, u.input);
  // brake's output ceiling, in the Responses API's name for it
  assert.equal(f.upstream.calls.at(-1).body.max_output_tokens, 50);
  const mid = await status();
  assert.equal(mid - before, u.input + u.output);
  const stream = await openai().responses.create({ model: 'fake-ok', input, stream: true });
  let text = '';
  let completed = null;
  for await (const event of stream) {
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.completed') completed = event.response;
  }
  assert.equal(text, 'Hello!');
  assert.equal(completed.usage.output_tokens, u.output);
  assert.equal((await status()) - mid, u.input + u.output);
});

test('anthropic: messages, whole and streamed', async () => {
  const messages = [{ role: 'user', content: 'hi claude' }];
  const msg = await anthropic().messages.create({ model: 'fake-ok', max_tokens: 20, messages });
  assert.equal(msg.content[0].text, 'Hello!');
  assert.equal(f.upstream.calls.at(-1).headers['x-api-key'], 'sk-upstream-anthropic');
  const before = (await f.brake.op({ op: 'status', user: 'alice' })).spend.tokens;
  const stream = anthropic().messages.stream({ model: 'fake-ok', max_tokens: 20, messages });
  const final = await stream.finalMessage();
  const u = fakeUsage({ messages });
  assert.equal(final.usage.output_tokens, u.output);
  const after = (await f.brake.op({ op: 'status', user: 'alice' })).spend.tokens;
  assert.equal(after - before, u.input + u.output);
});

test("brake's 429 is the SDKs' rate-limit error, and their retries wait its retry-after", async () => {
  // One request per second for bob: the second is denied for about a second.
  const set = await f.brake.op({ op: 'policy.set', scope: 'user:bob', limits: [
    { name: 'rps', resource: 'requests', algorithm: 'token_bucket', rate: 1, per_ms: 1000, burst: 1 }] });
  assert.equal(set.ok, true, JSON.stringify(set));
  const bob = new OpenAI({ apiKey: 'bk-bob-0001', baseURL: `${f.brake.base}/v1`, maxRetries: 0 });
  const messages = [{ role: 'user', content: 'x' }];
  await bob.chat.completions.create({ model: 'fake-ok', messages });
  await assert.rejects(bob.chat.completions.create({ model: 'fake-ok', messages }), (e) => {
    assert.ok(e instanceof OpenAI.RateLimitError, String(e));
    assert.equal(e.status, 429);
    assert.equal(e.code, 'rate_limited');
    assert.ok(Number(e.headers.get('retry-after-ms')) > 0);
    assert.equal(e.headers.get('x-ratelimit-limit-requests'), '1');
    assert.equal(e.headers.get('x-ratelimit-remaining-requests'), '0');
    return true;
  });
  const bobA = new Anthropic({ apiKey: 'bk-bob-0001', baseURL: f.brake.base, maxRetries: 0 });
  await assert.rejects(bobA.messages.create({ model: 'fake-ok', max_tokens: 5, messages }),
                       (e) => e instanceof Anthropic.RateLimitError);
  // With retries the SDK waits what brake said, then succeeds.
  const retrying = new OpenAI({ apiKey: 'bk-bob-0001', baseURL: `${f.brake.base}/v1`, maxRetries: 2 });
  const start = Date.now();
  const ok = await retrying.chat.completions.create({ model: 'fake-ok', messages });
  const waited = Date.now() - start;
  assert.equal(ok.choices[0].message.content, 'Hello!');
  assert.ok(waited >= 700 && waited < 3000, `waited ${waited} ms`);
  await f.brake.op({ op: 'policy.delete', scope: 'user:bob' });
});

test('unknown keys are 401 and malformed bodies 400, in the SDK error types', async () => {
  const stranger = new OpenAI({ apiKey: 'bk-nobody-1', baseURL: `${f.brake.base}/v1`, maxRetries: 0 });
  await assert.rejects(stranger.chat.completions.create({ model: 'fake-ok', messages: [] }),
                       (e) => e instanceof OpenAI.AuthenticationError);
  await assert.rejects(openai().chat.completions.create({ model: 'fake-ok', messages: 'nope' }),
                       (e) => e instanceof OpenAI.BadRequestError && /messages/.test(e.message));
});
