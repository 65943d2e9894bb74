// Exactness under concurrency: streaming calls racing for a usd cap never
// spend past it, the ledger holds exactly the usage the provider reported,
// and clients that leave mid-stream leave no lease open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI from 'openai';
import { fixture } from './harness.js';

const f = fixture({
  // A call reserves about 0.004 usd and spends about 0.001.
  prices: { 'fake-ok': { input_usd_per_mtok: 20, output_usd_per_mtok: 40 },
            'fake-slow': { input_usd_per_mtok: 20, output_usd_per_mtok: 40 } },
  http: { keys: { 'bk-carol-01': { user: 'carol' }, 'bk-dave-001': { user: 'dave' } } },
  policies: { 'user:carol': { limits: [
    { name: 'cap', resource: 'usd', algorithm: 'quota', limit: 1.0, period: 'total' }] } },
});

// One streamed call with its own body (so each reports its own usage):
// 'ok', 'denied' (429) or 'error'.
async function streamOnce(client, i) {
  try {
    const stream = await client.chat.completions.create({
      model: 'fake-ok', stream: true, max_tokens: 40,
      messages: [{ role: 'user', content: `call ${i} ${'x'.repeat(i % 23)}` }] });
    for await (const chunk of stream) void chunk;
    return 'ok';
  } catch (e) {
    return e instanceof OpenAI.RateLimitError ? 'denied' : `error ${e}`;
  }
}

test('200 concurrent streams against a 1 usd cap: never past it, the ledger exact', async () => {
  const client = new OpenAI({ apiKey: 'bk-carol-01', baseURL: `${f.brake.base}/v1`, maxRetries: 0 });
  const reportedBefore = { ...f.upstream.reported };
  let granted = 0;
  let denied = 0;
  // Waves of 200 at once until the cap refuses every call of a wave.
  for (let wave = 0; wave < 40; wave += 1) {
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => streamOnce(client, wave * 200 + i)));
    const errors = results.filter((r) => r.startsWith('error'));
    assert.deepEqual(errors, []);
    const ok = results.filter((r) => r === 'ok').length;
    granted += ok;
    denied += results.length - ok;
    const status = await f.brake.op({ op: 'status', user: 'carol' });
    assert.ok(status.spend.usd <= 1.0 + 1e-9, `spent ${status.spend.usd} of a 1 usd cap`);
    if (ok === 0) break;
  }
  assert.ok(granted > 200, `granted ${granted}`);
  assert.ok(denied > 0);
  const status = await f.brake.op({ op: 'status', user: 'carol' });
  assert.deepEqual(status.reserved, { requests: 0, tokens: 0, usd: 0 });
  // What the ledger settled is what the provider reported, token for token.
  const usage = await f.brake.op({ op: 'usage', user: 'carol', by: 'total' });
  assert.equal(usage.ok, true, JSON.stringify(usage));
  const row = usage.rows[0];
  assert.equal(row.input_tokens, f.upstream.reported.input - reportedBefore.input);
  assert.equal(row.output_tokens, f.upstream.reported.output - reportedBefore.output);
  assert.equal(row.calls, granted);
  assert.equal(row.estimated, 0);  // every one reported by the provider
  // The cap is spent to within one call's reservation.
  assert.ok(status.spend.usd > 0.9, `spent ${status.spend.usd}`);
});

test('50 clients that disconnect mid-stream leave no lease open', async () => {
  const url = new URL(`${f.brake.base}/v1/chat/completions`);
  const cut = await Promise.all(Array.from({ length: 50 }, (_, i) => new Promise((ok, fail) => {
    const req = http.request(url, { method: 'POST', headers: {
      authorization: 'Bearer bk-dave-001', 'content-type': 'application/json' } }, (res) => {
      res.once('data', () => { req.destroy(); ok(res.statusCode); });
      res.on('error', () => {});
    });
    req.on('error', (e) => { if (!req.destroyed) fail(e); });
    req.end(JSON.stringify({ model: 'fake-slow', stream: true, max_tokens: 30,
                             messages: [{ role: 'user', content: `leave ${i}` }] }));
  })));
  assert.deepEqual([...new Set(cut)], [200]);
  // Each is settled as the front sees the client go: soon, not at the lease TTL.
  let status;
  for (let i = 0; i < 100; i += 1) {
    status = await f.brake.op({ op: 'status', user: 'dave' });
    if (status.reserved.requests === 0 && status.spend.requests === 50) break;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.deepEqual(status.reserved, { requests: 0, tokens: 0, usd: 0 });
  assert.equal(status.spend.requests, 50);
  // Settled from what was received: the ledger says so.
  const usage = await f.brake.op({ op: 'usage', user: 'dave', by: 'total' });
  assert.equal(usage.rows[0].calls, 50);
  assert.equal(usage.rows[0].estimated, 50);
  const metrics = (await f.brake.op({ op: 'metrics' })).text;
  assert.match(metrics, /brake_front_streams_cut_total\{upstream="openai",by="client"\} 50/);
});
