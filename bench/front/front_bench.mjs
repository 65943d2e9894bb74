// The HTTP front's cost: the latency it adds over calling the provider
// directly, p50 and p99, at 1 and 16 concurrent callers, and the calls per
// second it carries (docs/PERFORMANCE.md).
//
//   BRAKED_PATH=build/daemon/braked node bench/front/front_bench.mjs \
//     [--seconds 5] [--durability strict|batched] [--concurrency 1,16]
//
// The provider is the SDK tests' fake upstream (tests/sdk/harness.js): it
// answers a chat completion at once, on this machine, so what is measured is
// brake's share. Each caller sends one non-streamed call at a time over a
// keep-alive connection, first straight to the fake, then through braked's
// front (a user with a usd cap and a rate limit that never denies).
import http from 'node:http';
import { Braked, FakeUpstream } from '../../tests/sdk/harness.js';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const seconds = Number(args.seconds ?? 5);
const durability = args.durability ?? 'strict';
const levels = (args.concurrency ?? '1,16').split(',').map(Number);

const body = JSON.stringify({ model: 'fake-ok', max_tokens: 64,
  messages: [{ role: 'user', content: 'What is the capital of France? Answer in one word.' }] });

function call(agent, url, headers) {
  return new Promise((ok, fail) => {
    const start = process.hrtime.bigint();
    const req = http.request(url, { method: 'POST', agent, headers: {
      'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => {
        if (res.statusCode !== 200) fail(new Error(`status ${res.statusCode}`));
        else ok(Number(process.hrtime.bigint() - start) / 1e6);
      });
    });
    req.on('error', fail);
    req.end(body);
  });
}

async function run(url, headers, concurrency) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const lat = [];
  const end = Date.now() + seconds * 1000;
  const warm = Date.now() + 500;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      const ms = await call(agent, url, headers);
      if (Date.now() > warm) lat.push(ms);
    }
  }));
  agent.destroy();
  lat.sort((a, b) => a - b);
  const at = (q) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))];
  return { p50: at(0.5), p99: at(0.99), rps: lat.length / (seconds - 0.5) };
}

const upstream = await new FakeUpstream().start();
const brake = await new Braked(upstream, {
  durability,
  policies: { 'user:*': { limits: [
    { name: 'cap', resource: 'usd', algorithm: 'quota', limit: 1e9, period: 'day' },
    { name: 'rps', resource: 'requests', algorithm: 'token_bucket', rate: 1e6, per_ms: 1000, burst: 1e6 }] } },
}).start();
const rows = [];
for (const c of levels) {
  const direct = await run(`${upstream.url}/v1/chat/completions`, {}, c);
  const front = await run(`${brake.base}/v1/chat/completions`, { authorization: 'Bearer bk-alice-1' }, c);
  rows.push({ c, direct, front });
}
await brake.stop();
await upstream.stop();
const f = (v) => v.toFixed(3);
console.log(`durability ${durability}, ${seconds} s per cell (ms; added = through the front - direct)`);
console.log('callers | direct p50 | direct p99 | front p50 | front p99 | added p50 | added p99 | front calls/s');
for (const { c, direct, front } of rows) {
  console.log(`${String(c).padStart(7)} | ${f(direct.p50).padStart(10)} | ${f(direct.p99).padStart(10)} | ` +
    `${f(front.p50).padStart(9)} | ${f(front.p99).padStart(9)} | ${f(front.p50 - direct.p50).padStart(9)} | ` +
    `${f(front.p99 - direct.p99).padStart(9)} | ${front.rps.toFixed(0).padStart(13)}`);
}
