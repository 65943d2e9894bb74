// The SDK tests' harness: a fake upstream (the providers' APIs as the
// tests need them, no network), a real braked started with an http front
// pointing at it, and a client of braked's socket for its ops.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import http from 'node:http';
import { before, after } from 'node:test';
import assert from 'node:assert/strict';

export const BRAKED = process.env.BRAKED_PATH;
if (!BRAKED) throw new Error('BRAKED_PATH: the braked binary to test');

// A port nothing listens on now.
export async function freePort() {
  const s = net.createServer();
  await new Promise((ok) => s.listen(0, '127.0.0.1', ok));
  const { port } = s.address();
  await new Promise((ok) => s.close(ok));
  return port;
}

// Usage the fake reports for a request: a function of its body, so that
// the tests can add up what was reported.
export function fakeUsage(body) {
  const text = JSON.stringify(body.messages ?? body.input ?? '');
  return { input: 10 + (text.length % 37), output: 3 + (text.length % 5) };
}

// The fake upstream. The model names the behaviour: fake-ok, fake-slow
// (answers after 300 ms, streams a chunk every 100 ms), fake-429 (429 with retry-after: 1), fake-broken
// (a stream cut after two chunks), fake-malformed (not JSON), fake-5xx.
export class FakeUpstream {
  constructor() {
    this.calls = [];  // {path, body, headers}
    this.reported = { input: 0, output: 0 };  // usage sent in answers
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
  }
  async start() {
    await new Promise((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }
  async stop() {
    this.server.closeAllConnections?.();
    await new Promise((ok) => this.server.close(ok));
  }
  handle(req, res) {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      let body = {};
      try { body = raw ? JSON.parse(raw) : {}; } catch { body = {}; }
      this.calls.push({ path: req.url, body, headers: req.headers });
      const model = body.model ?? '';
      const send = () => this.answer(req, res, body, model);
      if (model === 'fake-slow') setTimeout(send, 300); else send();
    });
  }
  answer(req, res, body, model) {
    if (req.method === 'GET' && req.url.startsWith('/v1/models')) {
      return json(res, 200, { object: 'list', data: [{ id: 'fake-ok', object: 'model' }] });
    }
    if (model === 'fake-429') {
      res.setHeader('retry-after', '1');
      return json(res, 429, { error: { message: 'slow down', type: 'rate_limit_error', code: null } });
    }
    if (model === 'fake-5xx') return json(res, 500, { error: { message: 'boom', type: 'server_error' } });
    if (model === 'fake-malformed') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end('{"choices": [ not json');
    }
    const usage = fakeUsage(body);
    const anthropic = req.url.startsWith('/v1/messages');
    if (req.url.startsWith('/v1/responses')) return this.respond(res, body, model, usage);
    if (!body.stream) {
      this.report(usage);
      if (anthropic) {
        return json(res, 200, {
          id: 'msg_1', type: 'message', role: 'assistant', model,
          content: [{ type: 'text', text: 'Hello!' }], stop_reason: 'end_turn',
          usage: { input_tokens: usage.input, output_tokens: usage.output },
        });
      }
      return json(res, 200, {
        id: 'chatcmpl-1', object: 'chat.completion', created: 1, model,
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const words = ['Hel', 'lo', ' there', '!', ' Bye'].slice(0, usage.output);
    let i = 0;
    const broken = model === 'fake-broken';
    const next = () => {
      if (res.destroyed) return;
      if (broken && i === 2) { res.socket.destroy(); return; }
      if (i < words.length) {
        res.write(anthropic ? anthropicDelta(words[i]) : chatChunk(model, words[i], body));
        i += 1;
        setTimeout(next, model === 'fake-slow' ? 100 : 5);
        return;
      }
      this.report(usage);
      if (anthropic) {
        res.write(sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: usage.output } }));
        res.write(sse('message_stop', { type: 'message_stop' }));
      } else {
        if (body.stream_options?.include_usage) {
          res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model, choices: [],
            usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } })}\n\n`);
        }
        res.write('data: [DONE]\n\n');
      }
      res.end();
    };
    if (anthropic) {
      res.write(sse('message_start', { type: 'message_start', message: {
        id: 'msg_1', type: 'message', role: 'assistant', model, content: [], stop_reason: null,
        usage: { input_tokens: usage.input, output_tokens: 1 } } }));
      res.write(sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
    }
    next();
  }
  // The Responses API: a response, or its events (created, text deltas,
  // completed with the usage).
  respond(res, body, model, usage) {
    const response = (status, u) => ({
      id: 'resp_1', object: 'response', created_at: 1, status, model,
      output: status === 'completed' ? [{ type: 'message', id: 'msg_1', status, role: 'assistant',
        content: [{ type: 'output_text', text: 'Hello!', annotations: [] }] }] : [],
      usage: u && { input_tokens: u.input, input_tokens_details: { cached_tokens: 0 },
        output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: u.input + u.output },
    });
    this.report(usage);
    if (!body.stream) return json(res, 200, response('completed', usage));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let n = 0;
    const event = (type, rest) => res.write(sse(type, { type, sequence_number: n++, ...rest }));
    event('response.created', { response: response('in_progress', null) });
    for (const delta of ['Hel', 'lo!']) {
      event('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta });
    }
    event('response.completed', { response: response('completed', usage) });
    res.end();
  }
  report(usage) {
    this.reported.input += usage.input;
    this.reported.output += usage.output;
  }
}

function json(res, status, value) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
function sse(event, data) { return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`; }
function chatChunk(model, text) {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model,
    choices: [{ index: 0, delta: { content: text }, finish_reason: null }], usage: null })}\n\n`;
}
function anthropicDelta(text) {
  return sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } });
}

// braked with an http front on `upstream`; `extra` is merged into its config.
export class Braked {
  constructor(upstream, extra = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'brake-sdk-'));
    this.socket = join(this.dir, 'braked.sock');
    this.upstream = upstream;
    this.extra = extra;
  }
  async start() {
    this.port = await freePort();
    const config = {
      http: {
        listen: `127.0.0.1:${this.port}`,
        upstreams: {
          openai: { base_url: this.upstream.url, api_key_env: 'FAKE_OPENAI_KEY' },
          anthropic: { base_url: this.upstream.url, api_key_env: 'FAKE_ANTHROPIC_KEY' },
        },
        keys: { 'bk-alice-1': { user: 'alice' }, 'bk-bob-0001': { user: 'bob' } },
        default_max_tokens: 50,
        ...(this.extra.http ?? {}),
      },
      prices: { 'fake-ok': { input_usd_per_mtok: 1000, output_usd_per_mtok: 2000 },
                '*': { input_usd_per_mtok: 1000, output_usd_per_mtok: 2000 } },
      ...Object.fromEntries(Object.entries(this.extra).filter(([k]) => k !== 'http')),
    };
    writeFileSync(join(this.dir, 'config.json'), JSON.stringify(config));
    this.log = '';
    this.proc = spawn(BRAKED, ['--socket', this.socket, '--db', join(this.dir, 'brake.db'),
      '--config', join(this.dir, 'config.json')], {
      env: { ...process.env, FAKE_OPENAI_KEY: 'sk-upstream-openai', FAKE_ANTHROPIC_KEY: 'sk-upstream-anthropic' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.proc.stderr.on('data', (d) => { this.log += d; });
    const deadline = Date.now() + 10_000;
    while (!this.log.includes('listening on')) {
      if (this.proc.exitCode !== null || Date.now() > deadline) {
        throw new Error(`braked did not start:\n${this.log}`);
      }
      await new Promise((ok) => setTimeout(ok, 20));
    }
    this.base = `http://127.0.0.1:${this.port}`;
    return this;
  }
  // One op on braked's socket; its reply.
  async op(request) {
    return new Promise((ok, fail) => {
      const c = net.createConnection(this.socket);
      let buf = '';
      c.on('data', (d) => {
        buf += d;
        const nl = buf.indexOf('\n');
        if (nl >= 0) { c.end(); ok(JSON.parse(buf.slice(0, nl))); }
      });
      c.on('error', fail);
      c.write(`${JSON.stringify(request)}\n`);
    });
  }
  async stop() {
    if (this.proc.exitCode === null) {
      const exited = new Promise((ok) => this.proc.on('exit', ok));
      this.proc.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
    return this.proc.exitCode;
  }
}

// A fake upstream and a braked in front of it for one test file: started
// before its tests, stopped after them (braked must exit 0). `extra` as for
// Braked. Its `upstream` and `brake` are there once the tests run.
export function fixture(extra = {}) {
  const f = {};
  before(async () => {
    f.upstream = await new FakeUpstream().start();
    f.brake = await new Braked(f.upstream, extra).start();
  });
  after(async () => {
    assert.equal(await f.brake.stop(), 0, f.brake.log);
    await f.upstream.stop();
  });
  return f;
}
