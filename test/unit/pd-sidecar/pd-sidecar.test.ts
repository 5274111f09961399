/**
 * The pd-sidecar against in-process HTTP engines that record what they get: both connector
 * forms, the fallbacks to aggregated serving, and the refusal of a prefiller it may not use.
 */
import { expect } from 'chai';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { silentLogger } from '../../../src/logging/logger.js';
import { PD_RESULT_HEADER, PD_SIDECAR_DEFAULTS, PdSidecar, type PdConnector } from '../../../src/pd-sidecar/pd-sidecar.js';

interface Seen {
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

/** An engine answering `reply(body)`; records every request. */
async function engine(
  reply: (body: Record<string, unknown>) => { status: number; body: string },
): Promise<{ port: number; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString() || '{}') as Record<string, unknown>;
      seen.push({ body, headers: req.headers });
      const r = reply(body);
      res.writeHead(r.status, { 'content-type': body['stream'] === true ? 'text/event-stream' : 'application/json' });
      res.end(r.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const addr = server.address();
  return { port: typeof addr === 'object' && addr !== null ? addr.port : 0, seen, server };
}

function post(
  port: number,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const r = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/completions',
        headers: { 'content-type': 'application/json', 'content-length': String(data.length), ...headers },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString() }));
      },
    );
    r.on('error', reject);
    r.end(data);
  });
}

const SSE = 'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b"}]}\n\ndata: [DONE]\n\n';
const REQ = { model: 'm', prompt: 'long prompt', max_tokens: 8, stream: true, stream_options: { include_usage: true } };

describe('pd-sidecar', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  async function setup(
    connector: PdConnector,
    prefill: Parameters<typeof engine>[0],
    decode: Parameters<typeof engine>[0],
    allowed?: string[],
  ) {
    const p = await engine(prefill);
    const d = await engine(decode);
    const sidecar = new PdSidecar({
      ...PD_SIDECAR_DEFAULTS,
      prefillTimeoutMs: 2000,
      listen: '127.0.0.1:0',
      decode: `127.0.0.1:${d.port}`,
      connector,
      logger: silentLogger,
      ...(allowed ? { allowedPrefillers: allowed } : {}),
    });
    const port = await sidecar.start();
    closers.push(
      () => sidecar.stop(),
      () => new Promise((r) => p.server.close(() => r())),
      () => new Promise((r) => d.server.close(() => r())),
    );
    return { p, d, port, sidecar, prefiller: `127.0.0.1:${p.port}` };
  }

  it('shared-store: a one-token prefill on the named engine, then the request as sent on the decode engine, streamed back unchanged', async () => {
    const s = await setup(
      'shared-store',
      () => ({ status: 200, body: '{"choices":[{"text":"x"}]}' }),
      () => ({ status: 200, body: SSE }),
    );
    const r = await post(s.port, REQ, { 'x-prefiller-host-port': s.prefiller });
    expect(r.status).to.equal(200);
    expect(r.text).to.equal(SSE);
    expect(r.headers[PD_RESULT_HEADER]).to.equal('split');
    expect(s.p.seen).to.have.length(1);
    expect(s.p.seen[0]!.body).to.deep.include({ max_tokens: 1, stream: false, prompt: 'long prompt' });
    expect(s.p.seen[0]!.body).to.not.have.property('stream_options');
    expect(s.d.seen[0]!.body).to.deep.equal(REQ);
    for (const e of [...s.p.seen, ...s.d.seen]) expect(e.headers).to.not.have.property('x-prefiller-host-port');
  });

  it('nixl: the prefill leg asks for remote decode and its kv_transfer_params go to the decode leg', async () => {
    const params = {
      remote_engine_id: 'e1',
      remote_block_ids: [1, 2],
      remote_host: '127.0.0.1',
      remote_port: 5600,
      do_remote_prefill: true,
    };
    const s = await setup(
      'nixl',
      () => ({ status: 200, body: JSON.stringify({ choices: [], kv_transfer_params: params }) }),
      () => ({ status: 200, body: SSE }),
    );
    const r = await post(s.port, REQ, { 'x-prefiller-host-port': s.prefiller });
    expect(r.headers[PD_RESULT_HEADER]).to.equal('split');
    expect(s.p.seen[0]!.body['kv_transfer_params']).to.deep.include({ do_remote_decode: true, do_remote_prefill: false });
    expect(s.d.seen[0]!.body['kv_transfer_params']).to.deep.equal(params);
    expect(r.text).to.equal(SSE);
  });

  it('a failing prefill engine (error answer, or nothing listening) falls back to aggregated serving', async () => {
    const s = await setup(
      'shared-store',
      () => ({ status: 500, body: '{}' }),
      () => ({ status: 200, body: SSE }),
    );
    const r = await post(s.port, REQ, { 'x-prefiller-host-port': s.prefiller });
    expect(r.headers[PD_RESULT_HEADER]).to.equal('aggregated-prefill-failed');
    expect(r.text).to.equal(SSE);
    expect(s.d.seen[0]!.body).to.deep.equal(REQ);
    const gone = await post(s.port, REQ, { 'x-prefiller-host-port': '127.0.0.1:1' });
    expect(gone.headers[PD_RESULT_HEADER]).to.equal('aggregated-prefill-failed');
    expect(gone.status).to.equal(200);
  });

  it('nixl: a decode engine that rejects the transferred KV gets the request once more without it', async () => {
    const s = await setup(
      'nixl',
      () => ({ status: 200, body: JSON.stringify({ kv_transfer_params: { remote_engine_id: 'e' } }) }),
      (b) => (b['kv_transfer_params'] !== undefined ? { status: 400, body: '{"error":"bad kv"}' } : { status: 200, body: SSE }),
    );
    const r = await post(s.port, REQ, { 'x-prefiller-host-port': s.prefiller });
    expect(r.headers[PD_RESULT_HEADER]).to.equal('aggregated-kv-rejected');
    expect(r.status).to.equal(200);
    expect(s.d.seen.map((x) => x.body['kv_transfer_params'] !== undefined)).to.deep.equal([true, false]);
  });

  it('refuses a prefiller that is not a loopback or allowed ip:port literal, without calling any engine', async () => {
    const s = await setup(
      'shared-store',
      () => ({ status: 200, body: '{}' }),
      () => ({ status: 200, body: SSE }),
    );
    for (const bad of ['10.9.9.9:8000', 'evil.example:80', 'garbage']) {
      const r = await post(s.port, REQ, { 'x-prefiller-host-port': bad });
      expect(r.status, bad).to.equal(400);
    }
    expect(s.p.seen.length + s.d.seen.length).to.equal(0);
  });

  it('a request without the header goes to the decode engine as it came', async () => {
    const s = await setup(
      'shared-store',
      () => ({ status: 200, body: '{}' }),
      () => ({ status: 200, body: SSE }),
    );
    const r = await post(s.port, REQ);
    expect(r.headers[PD_RESULT_HEADER]).to.equal('passthrough');
    expect(s.p.seen).to.have.length(0);
    expect(s.d.seen[0]!.body).to.deep.equal(REQ);
  });
});
