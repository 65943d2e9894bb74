// Cap utilization under many agents: N agents stream chat completions
// through braked's front on one usd cap, each with a realistic prompt (2 to
// 100 KB of English-like text), max_tokens 1024, and an answer of 50 to 500
// tokens, until the cap refuses them as spent. Reports how much of the cap
// was spent (utilization), whether it was passed (overshoot), the calls
// served and refused, and how much a call reserved against what it cost
// (docs/PERFORMANCE.md).
//
//   BRAKED_PATH=build/daemon/braked node bench/front/held_bench.mjs \
//     [--agents 50] [--cap 5] [--latency-ms 200] [--seed 1]
//
// The provider is a fake on this machine: it reports prompt_tokens as a
// quarter of the prompt's bytes (English text runs about 4 bytes a token)
// and answers after --latency-ms, streaming its tokens, so calls overlap as
// agents' calls do. gpt-4o's prices (2.5 / 10 usd per million tokens).
import http from 'node:http';
import { Braked } from '../../tests/sdk/harness.js';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const agents = Number(args.agents ?? 50);
const cap = Number(args.cap ?? 5);
const latencyMs = Number(args['latency-ms'] ?? 200);
let seed = Number(args.seed ?? 1);
const random = () => {  // xorshift: the same prompts every run
  seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
  return ((seed >>> 0) % 1_000_000) / 1_000_000;
};
const words = ('the of and to in is that for it as was with be by on not he this are or his '
  + 'from at which but have an they you were her she there one all we their can has more '
  + 'budget agent model token prompt answer search result context tool call retry plan').split(' ');
function text(bytes) {
  let s = '';
  while (s.length < bytes) s += `${words[Math.floor(random() * words.length)]} `;
  return s.slice(0, bytes);
}

// The provider: usage from the prompt's bytes, answers of 50-500 tokens.
const upstream = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (d) => { raw += d; });
  req.on('end', () => {
    const body = JSON.parse(raw);
    const promptBytes = body.messages.reduce((n, m) => n + Buffer.byteLength(m.content), 0);
    const usage = { prompt_tokens: Math.ceil(promptBytes / 4),
                    completion_tokens: 50 + Math.floor(random() * 451) };
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta, u = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk',
        created: 1, model: body.model, choices: delta ? [{ index: 0, delta, finish_reason: null }] : [], usage: u })}\n\n`;
      res.write(chunk({ content: 'Hello' }));
      if (body.stream_options?.include_usage) res.write(chunk(null, usage));
      res.end('data: [DONE]\n\n');
    }, latencyMs);
  });
});
await new Promise((ok) => upstream.listen(0, '127.0.0.1', ok));
upstream.url = `http://127.0.0.1:${upstream.address().port}`;

const brake = await new Braked(upstream, {
  prices: { 'gpt-4o': { input_usd_per_mtok: 2.5, output_usd_per_mtok: 10 } },
  http: { keys: { 'bk-team-0001': { user: 'team' } }, default_max_tokens: 1024,
          max_body_bytes: 1 << 20 },
  policies: { 'user:team': { limits: [
    { name: 'cap', resource: 'usd', algorithm: 'quota', limit: cap, period: 'total' }] } },
}).start();

const counts = { ok: 0, spent: 0, reserved: 0, timeout: 0, other: 0 };
let reservedUsd = 0;
let promptBytes = 0;
function call(i) {
  const content = text(2048 + Math.floor(random() * 98 * 1024));
  promptBytes += content.length;
  const body = JSON.stringify({ model: 'gpt-4o', stream: true, max_tokens: 1024,
    messages: [{ role: 'user', content }] });
  return new Promise((ok) => {
    const req = http.request(`${brake.base}/v1/chat/completions`, { method: 'POST', headers: {
      authorization: 'Bearer bk-team-0001', 'content-type': 'application/json',
      'x-brake-task': `agent-${i}` } }, (res) => {
      let answer = '';
      res.on('data', (d) => { answer += d; });
      res.on('end', () => {
        if (res.statusCode === 200) {
          reservedUsd += Number(res.headers['x-brake-reserved-usd'] ?? 0);
          ok('ok');
        } else if (res.statusCode === 429) {
          ok(JSON.parse(answer).error?.code === 'cost_cap' ? 'spent'
             : JSON.parse(answer).error?.code ?? 'other');
        } else {
          ok('other');
        }
      });
    });
    req.on('error', () => ok('other'));
    req.end(body);
  });
}

const started = Date.now();
await Promise.all(Array.from({ length: agents }, async (_, i) => {
  for (;;) {
    const r = await call(i);
    counts[r in counts ? r : 'other'] += 1;
    if (r !== 'ok') return;  // spent (or refused otherwise): this agent stops
  }
}));
const seconds = (Date.now() - started) / 1000;
const status = await brake.op({ op: 'status', user: 'team' });
const usage = await brake.op({ op: 'usage', user: 'team', by: 'total' });
await brake.stop();
upstream.close();
const spent = status.spend.usd;
const calls = usage.rows[0]?.calls ?? 0;
console.log(JSON.stringify({
  agents, cap_usd: cap, seconds,
  spent_usd: Number(spent.toFixed(6)),
  utilization: Number((spent / cap).toFixed(4)),
  overshoot_usd: Number(Math.max(0, spent - cap).toFixed(6)),
  calls_served: counts.ok, refused_spent: counts.spent, refused_reserved: counts.reserved,
  timeouts: counts.timeout, other: counts.other,
  reserved_per_call_usd: Number((reservedUsd / Math.max(1, counts.ok)).toFixed(6)),
  spent_per_call_usd: Number((spent / Math.max(1, calls)).toFixed(6)),
  prompt_kb_per_call: Number((promptBytes / 1024 / (counts.ok + counts.spent + counts.reserved)).toFixed(1)),
}));
