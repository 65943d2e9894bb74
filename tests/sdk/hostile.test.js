// Bad input at the front: malformed HTTP, oversized heads and bodies,
// invalid JSON, unknown routes, a slow-loris client, a thousand idle
// connections. Each gets a clear 4xx (or is closed), braked does not
// crash, and a polite client is served throughout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { fixture } from './harness.js';

const f = fixture({
  http: { max_header_bytes: 4096, max_body_bytes: 65536, header_timeout_ms: 500,
          idle_timeout_ms: 1500 },
});

// Sends `bytes` on a fresh connection; resolves with what came back
// before the server closed it (or `waitMs` passed).
function raw(bytes, waitMs = 3000) {
  return new Promise((ok) => {
    const s = net.createConnection(f.brake.port, '127.0.0.1');
    let got = '';
    const done = () => { clearTimeout(timer); s.destroy(); ok(got); };
    const timer = setTimeout(done, waitMs);
    s.on('data', (d) => { got += d; });
    s.on('end', done);
    s.on('error', done);
    if (bytes) s.write(bytes);
  });
}

const statusOf = (answer) => Number(answer.split(' ')[1]);

async function polite() {
  const client = new OpenAI({ apiKey: 'bk-alice-1', baseURL: `${f.brake.base}/v1`, maxRetries: 0 });
  const start = Date.now();
  const r = await client.chat.completions.create({ model: 'fake-ok', max_tokens: 5,
                                                  messages: [{ role: 'user', content: 'still there?' }] });
  assert.equal(r.choices[0].message.content, 'Hello!');
  return Date.now() - start;
}

test('malformed HTTP is 400 and closed', async () => {
  const a = await raw('GARBAGE / HTTP/1.1\r\n\r\n');
  assert.equal(statusOf(a), 400);
  assert.match(a, /malformed HTTP/);
  const b = await raw('POST /v1/chat/completions HTTP/1.1\r\nContent-Length: zz\r\n\r\n');
  assert.equal(statusOf(b), 400);
  const c = await raw('POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n');
  assert.equal(statusOf(c), 400);
  await polite();
});

test('an oversized head is 431, an oversized body 413', async () => {
  const head = await raw(`GET /v1/models HTTP/1.1\r\nx-big: ${'a'.repeat(8000)}\r\n\r\n`);
  assert.equal(statusOf(head), 431);
  const declared = await raw('POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 999999\r\n\r\n');
  assert.equal(statusOf(declared), 413);
  const chunk = 'x'.repeat(40000);
  const chunked = await raw('POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n' +
                            `${chunk.length.toString(16)}\r\n${chunk}\r\n`.repeat(2));
  assert.equal(statusOf(chunked), 413);
  await polite();
});

test('invalid JSON and bad fields are 400 naming them; unknown routes 404', async () => {
  const req = (path, body, method = 'POST') => fetch(`${f.brake.base}${path}`, {
    method, headers: { authorization: 'Bearer bk-alice-1' }, body });
  let r = await req('/v1/chat/completions', '{"model":');
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, 'bad_json');
  r = await req('/v1/chat/completions', JSON.stringify({ model: 'fake-ok', max_tokens: 'many' }));
  assert.equal(r.status, 400);
  assert.match((await r.json()).error.message, /max_tokens/);
  r = await req('/v1/nothing', '{}');
  assert.equal(r.status, 404);
  assert.equal((await r.json()).error.code, 'unknown_url');
  r = await req('/v1/chat/completions', undefined, 'GET');
  assert.equal(r.status, 405);
  await r.arrayBuffer();
  r = await req('/v1/models', undefined, 'GET');
  assert.equal(r.status, 200);
  assert.equal((await r.json()).data[0].id, 'fake-ok');
  // The provider's malformed answer is passed on as it came; brake settles
  // the call at its ceiling estimate.
  r = await req('/v1/chat/completions', JSON.stringify({ model: 'fake-malformed', max_tokens: 5, messages: [] }));
  assert.equal(r.status, 200);
  assert.equal(await r.text(), '{"choices": [ not json');
});

test('a slow-loris head is cut at header_timeout_ms with a 408', async () => {
  const start = Date.now();
  const answer = await new Promise((ok) => {
    const s = net.createConnection(f.brake.port, '127.0.0.1');
    let got = '';
    const drip = setInterval(() => s.write('x'), 100);
    s.write('POST /v1/chat/completions HTTP/1.1\r\nx-slow: ');
    s.on('data', (d) => { got += d; });
    s.on('close', () => { clearInterval(drip); ok(got); });
    s.on('error', () => {});
  });
  assert.equal(statusOf(answer), 408);
  const took = Date.now() - start;
  assert.ok(took >= 450 && took < 2500, `closed after ${took} ms`);
});

test('1,000 idle connections cost timers, not service, and are closed when idle', async () => {
  const sockets = await Promise.all(Array.from({ length: 1000 }, () => new Promise((ok, fail) => {
    const s = net.createConnection(f.brake.port, '127.0.0.1', () => ok(s));
    s.on('error', fail);
  })));
  const closed = sockets.map((s) => new Promise((ok) => s.on('close', ok)));
  const took = await polite();
  assert.ok(took < 1000, `a polite call took ${took} ms beside 1,000 idle connections`);
  await Promise.all(closed);  // the idle timeout (1.5 s) closed every one
  await polite();
  assert.equal(f.brake.proc.exitCode, null);
});
