/**
 * The ext_proc server (grpc-js) at the wire level, driven by a raw HTTP/2 client so the
 * tests can send what a gRPC library never would: split and coalesced frames, compressed
 * or oversized messages, garbage protobuf, wrong content types and paths, deadlines, a peer
 * that never answers PINGs, and random bytes. What is pinned is the behaviour Envoy sees
 * and the accounting behind it (every ticket finished, nothing left open), not who
 * implements the gRPC rules. (ext-proc-server.test.ts runs the conversations with a
 * grpc-js client.)
 */
import { expect } from 'chai';
import fc from 'fast-check';
import http2 from 'node:http2';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { defaultConfig } from '../../src/config/loader.js';
import { extractPrompt } from '../../src/request/extract-prompt.js';
import { EdgeContext } from '../../src/extproc/edge-context.js';
import { ExtProcServer } from '../../src/extproc/ext-proc-server.js';
import type { ExtProcServerOptions } from '../../src/extproc/ext-proc-server.js';
import { extProcServiceDefinition, PROCESS_METHOD_PATH } from '../../src/extproc/ext-proc-proto.js';
import type { ProcessingRequest, ProcessingResponse__Output } from '../../src/extproc/ext-proc-proto.js';
import { systemClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/logging/logger.js';
import { FakeRoutingService } from '../kit/fake-routing-service.js';
import { eventually } from '../kit/ext-proc-client.js';
import { chatBody, kindOf, requestBody, requestHeaders, responseBody, responseHeaders } from '../kit/ext-proc-messages.js';

const FDS = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'NONE' } as const;
const codec = extProcServiceDefinition().Process;

function framed(msg: ProcessingRequest, flag = 0): Buffer {
  const body = codec.requestSerialize(msg);
  const out = Buffer.alloc(5 + body.length);
  out[0] = flag;
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

interface RawResult {
  status: number | undefined;
  grpcStatus: string | undefined;
  grpcMessage: string | undefined;
  messages: ProcessingResponse__Output[];
}

/**
 * A raw gRPC stream: write bytes, collect decoded answers and the final status. Like a gRPC
 * client it closes its side when the status arrives, unless `lingers` (a misbehaving peer).
 */
class RawCall {
  readonly result: RawResult = { status: undefined, grpcStatus: undefined, grpcMessage: undefined, messages: [] };
  readonly closed: Promise<RawResult>;
  private pending = Buffer.alloc(0);

  constructor(
    readonly req: http2.ClientHttp2Stream,
    lingers = false,
  ) {
    const done = (): void => {
      if (!lingers && !req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
    };
    req.on('response', (h) => {
      this.result.status = Number(h[':status']);
      if (h['grpc-status'] !== undefined) this.result.grpcStatus = String(h['grpc-status']);
      if (h['grpc-message'] !== undefined) this.result.grpcMessage = decodeURIComponent(String(h['grpc-message']));
      if (h['grpc-status'] !== undefined || this.result.status !== 200) done();
    });
    req.on('trailers', (t) => {
      this.result.grpcStatus = String(t['grpc-status']);
      if (t['grpc-message'] !== undefined) this.result.grpcMessage = decodeURIComponent(String(t['grpc-message']));
      done();
    });
    req.on('data', (chunk: Buffer) => {
      this.pending = Buffer.concat([this.pending, chunk]);
      while (this.pending.length >= 5 && this.pending.length >= 5 + this.pending.readUInt32BE(1)) {
        const len = this.pending.readUInt32BE(1);
        this.result.messages.push(codec.responseDeserialize(this.pending.subarray(5, 5 + len)));
        this.pending = this.pending.subarray(5 + len);
      }
    });
    req.on('error', () => {});
    this.closed = new Promise((resolve) => req.on('close', () => resolve(this.result)));
  }

  async waitFor(n: number, timeoutMs = 5000): Promise<ProcessingResponse__Output[]> {
    await eventually(() => this.result.messages.length >= n || this.req.closed, `${n} answers`, timeoutMs);
    return this.result.messages;
  }
}

describe('integration: ext_proc server on the wire (raw HTTP/2 client)', function () {
  this.timeout(30000);
  let server: ExtProcServer;
  let routing: FakeRoutingService;
  let client: http2.ClientHttp2Session;
  let port: number;

  let streamErrors: string[];

  async function startWith(extra: Partial<ExtProcServerOptions> = {}): Promise<void> {
    const config = defaultConfig();
    routing = new FakeRoutingService();
    streamErrors = [];
    const stats = { streamOpened: () => {}, streamClosed: () => {}, streamError: (kind: string) => streamErrors.push(kind) };
    const edge = new EdgeContext({
      routing,
      extract: extractPrompt,
      requests: config.requests,
      decisionHeader: false,
      clock: systemClock,
      logger: silentLogger,
      stats,
    });
    server = new ExtProcServer({ address: '127.0.0.1:0', maxReceiveMessageBytes: 64 * 1024, edge, logger: silentLogger, ...extra });
    port = (await server.start()).port;
    client = http2.connect(`http://127.0.0.1:${port}`);
    client.on('error', () => {});
  }

  function call(headers: http2.OutgoingHttpHeaders = {}, lingers = false): RawCall {
    return new RawCall(
      client.request({ ':method': 'POST', ':path': PROCESS_METHOD_PATH, 'content-type': 'application/grpc', te: 'trailers', ...headers }),
      lingers,
    );
  }

  afterEach(async () => {
    client?.destroy();
    await server?.stop({ graceMs: 0 });
  });

  it('reassembles a message split into 1-byte DATA frames, and several messages in one frame', async () => {
    await startWith();
    const c = call();
    const bytes = Buffer.concat([framed(requestHeaders(FDS)), framed(requestBody(chatBody('split'), true))]);
    for (let i = 0; i < 40; i++) c.req.write(bytes.subarray(i, i + 1));
    c.req.write(bytes.subarray(40));
    const out = await c.waitFor(2);
    expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    expect(routing.requests).to.have.length(1);
    // Response headers and the half-close in one write: answer, then OK trailers.
    c.req.end(framed(responseHeaders(200)));
    const r = await c.closed;
    expect(r.messages.map(kindOf)).to.deep.equal(['request_headers', 'request_body', 'response_headers']);
    expect(r.grpcStatus).to.equal('0');
    await eventually(() => server.openStreams() === 0, 'released');
    expect(routing.inflight).to.equal(0);
  });

  it('finishes the ticket, not aborted, when the peer resets with any code after the response (e2e stream-endings checks the error count through Envoy)', async () => {
    await startWith();
    for (const code of [http2.constants.NGHTTP2_CANCEL, http2.constants.NGHTTP2_INTERNAL_ERROR, http2.constants.NGHTTP2_NO_ERROR]) {
      const c = call();
      const fdsBoth = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED' } as const;
      c.req.write(Buffer.concat([framed(requestHeaders(fdsBoth)), framed(requestBody(chatBody(`reset ${code}`), true))]));
      await c.waitFor(2);
      c.req.write(Buffer.concat([framed(responseHeaders(200)), framed(responseBody('{"usage":{}}', true))]));
      await c.waitFor(4);
      c.req.close(code);
      await eventually(() => server.openStreams() === 0, 'released');
    }
    expect(routing.inflight).to.equal(0);
    expect(routing.finished).to.have.length(3);
    expect(routing.finished.map((f) => f.outcome.aborted)).to.deep.equal([false, false, false]);
    expect(streamErrors.filter((k) => k === 'TRANSPORT')).to.deep.equal([]);
  });

  it('refuses a wrong content type (HTTP 415) and an unknown method path (UNIMPLEMENTED)', async () => {
    await startWith();
    const json = await call({ 'content-type': 'application/json' }).closed;
    expect(json.status).to.equal(415);
    const c = call({ ':path': '/envoy.service.ext_proc.v3.ExternalProcessor/Nope' });
    c.req.end();
    const unknown = await c.closed;
    expect(unknown.status).to.equal(200);
    expect(unknown.grpcStatus).to.equal(String(GrpcStatus.UNIMPLEMENTED));
    expect(unknown.grpcMessage).to.contain('/Nope');
    expect(routing.requests).to.have.length(0);
  });

  it('decodes gzip-compressed messages, refuses an unknown grpc-encoding (UNIMPLEMENTED), bad gzip (INTERNAL) and an oversized message (RESOURCE_EXHAUSTED) before buffering it', async () => {
    await startWith();
    const gz = (msg: ProcessingRequest): Buffer => {
      const body = gzipSync(codec.requestSerialize(msg));
      const out = Buffer.alloc(5 + body.length);
      out[0] = 1;
      out.writeUInt32BE(body.length, 1);
      body.copy(out, 5);
      return out;
    };
    const zipped = call({ 'grpc-encoding': 'gzip' });
    zipped.req.write(Buffer.concat([gz(requestHeaders(FDS)), gz(requestBody(chatBody('zipped'), true))]));
    expect((await zipped.waitFor(2)).map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    expect(routing.requests).to.have.length(1);
    zipped.req.close(http2.constants.NGHTTP2_CANCEL);
    const snappy = call({ 'grpc-encoding': 'snappy' });
    snappy.req.write(framed(requestHeaders(FDS), 1));
    expect((await snappy.closed).grpcStatus).to.equal(String(GrpcStatus.UNIMPLEMENTED));
    const badZip = call({ 'grpc-encoding': 'gzip' });
    badZip.req.write(framed(requestHeaders(FDS), 1)); // flagged compressed, but not gzip data
    expect((await badZip.closed).grpcStatus).to.equal(String(GrpcStatus.INTERNAL));
    const big = call();
    // Only the 5-byte prefix announcing 1 MiB (limit 64 KiB): refused without waiting for the rest.
    big.req.write(Buffer.from([0, 0, 0x10, 0, 0]));
    const tooLarge = await big.closed;
    expect(tooLarge.grpcStatus).to.equal(String(GrpcStatus.RESOURCE_EXHAUSTED));
    expect(tooLarge.grpcMessage).to.match(/1048576/);
    await eventually(() => server.openStreams() === 0, 'released');
    expect(routing.inflight).to.equal(0);
  });

  it('answers undecodable protobuf with INTERNAL; a stream ending inside a message routes nothing and leaks nothing; keeps serving', async () => {
    await startWith();
    const garbage = call();
    garbage.req.write(Buffer.concat([Buffer.from([0, 0, 0, 0, 4]), Buffer.from([0xff, 0xff, 0xff, 0xff])]));
    const g = await garbage.closed;
    expect(g.grpcStatus).to.equal(String(GrpcStatus.INTERNAL));
    expect(g.messages).to.have.length(0);
    const cut = call();
    cut.req.end(framed(requestHeaders(FDS)).subarray(0, 12));
    const c = await cut.closed;
    expect(c.grpcStatus).to.be.a('string');
    expect(c.messages).to.have.length(0);
    expect(routing.requests).to.have.length(0);
    const fine = call();
    fine.req.write(Buffer.concat([framed(requestHeaders(FDS)), framed(requestBody(chatBody('after'), true))]));
    expect((await fine.waitFor(2)).map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    fine.req.close(http2.constants.NGHTTP2_CANCEL);
    await eventually(() => server.openStreams() === 0, 'released');
    expect(routing.inflight).to.equal(0);
  });

  it('ends a stream past its grpc-timeout with DEADLINE_EXCEEDED and finishes the ticket as aborted', async () => {
    await startWith();
    const c = call({ 'grpc-timeout': '150m' });
    c.req.write(Buffer.concat([framed(requestHeaders(FDS)), framed(requestBody(chatBody('slow'), true))]));
    await c.waitFor(2);
    expect(routing.inflight).to.equal(1);
    const r = await c.closed;
    expect(r.grpcStatus).to.equal(String(GrpcStatus.DEADLINE_EXCEEDED));
    await eventually(() => server.openStreams() === 0, 'released');
    expect(routing.inflight).to.equal(0);
    expect(routing.finished[0]!.outcome.aborted).to.equal(true);
    const bad = call({ 'grpc-timeout': '12x' });
    expect((await bad.closed).grpcStatus).to.equal(String(GrpcStatus.INTERNAL));
  });

  it('a peer that keeps its side open after our status holds no ticket, and stop() still ends its stream', async () => {
    await startWith();
    const c = call({}, true);
    c.req.write(Buffer.concat([framed(requestHeaders(FDS)), framed(requestBody(chatBody('x'), true))]));
    await c.waitFor(2);
    expect(routing.inflight).to.equal(1);
    c.req.write(framed(requestHeaders(FDS))); // a second request_headers: protocol violation
    await eventually(() => c.result.grpcStatus !== undefined, 'the status arrived');
    expect(c.result.grpcStatus).to.equal(String(GrpcStatus.INVALID_ARGUMENT));
    expect(c.result.messages.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    await eventually(() => routing.inflight === 0, 'the ticket is finished');
    expect(routing.finished[0]!.outcome.aborted).to.equal(true);
    await server.stop({ graceMs: 200 });
    await c.closed;
    expect(server.openStreams()).to.equal(0);
  });

  it('percent-encodes grpc-message so any detail text survives the header', async () => {
    await startWith();
    const c = call();
    // A protocol violation whose detail the handler writes: response headers first.
    c.req.write(framed(responseHeaders(200)));
    const r = await c.closed;
    expect(r.grpcStatus).to.equal(String(GrpcStatus.INVALID_ARGUMENT));
    expect(r.grpcMessage)
      .to.be.a('string')
      .and.not.match(/%[0-9A-F]{2}/);
    expect(r.grpcMessage!.length).to.be.greaterThan(5);
  });

  it('closes a connection whose peer never acknowledges keepalive PINGs', async () => {
    await startWith({ keepalive: { timeMs: 100, timeoutMs: 100 } });
    // A bare TCP peer: HTTP/2 preface and an empty SETTINGS frame, then silence (no SETTINGS ACK, no PING ACK).
    const sock = net.connect(port, '127.0.0.1');
    sock.on('error', () => {});
    sock.on('data', () => {});
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    const start = Date.now();
    await new Promise<void>((r) => sock.once('close', () => r()));
    expect(Date.now() - start).to.be.below(5000);
    // A live client (Node acknowledges PINGs) keeps its connection across several intervals.
    const c = call();
    c.req.write(framed(requestHeaders(FDS)));
    await new Promise((r) => setTimeout(r, 600));
    expect(client.closed || client.destroyed).to.equal(false);
    c.req.write(framed(requestBody(chatBody('alive'), true)));
    expect((await c.waitFor(2)).map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
  });

  it('refuses streams with UNAVAILABLE while draining and lets the open one finish', async () => {
    await startWith();
    const open = call();
    open.req.write(Buffer.concat([framed(requestHeaders(FDS)), framed(requestBody(chatBody('drain'), true))]));
    await open.waitFor(2);
    const stopped = server.stop({ graceMs: 5000 });
    await new Promise((r) => setTimeout(r, 50));
    open.req.end(framed(responseHeaders(200)));
    const r = await open.closed;
    expect(r.grpcStatus).to.equal('0');
    expect(r.messages.map(kindOf)).to.deep.equal(['request_headers', 'request_body', 'response_headers']);
    await stopped;
    expect(routing.inflight).to.equal(0);
  });

  it('random bytes on random streams never crash the server, never disturb a control stream, and leak nothing', async () => {
    await startWith();
    const valid = [framed(requestHeaders(FDS)), framed(requestBody(chatBody('fuzz'), true)), framed(responseHeaders(200))];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 64 }),
            fc.constantFrom(...valid).map((b) => new Uint8Array(b)),
          ),
          { maxLength: 6 },
        ),
        fc.constantFrom('cancel', 'end'),
        async (chunks, ending) => {
          const noisy = call();
          const control = call();
          for (const ch of chunks) noisy.req.write(Buffer.from(ch));
          control.req.write(Buffer.concat([valid[0]!, valid[1]!]));
          expect((await control.waitFor(2)).map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
          control.req.close(http2.constants.NGHTTP2_CANCEL);
          if (ending === 'end') noisy.req.end();
          else noisy.req.close(http2.constants.NGHTTP2_CANCEL);
          await noisy.closed;
          await eventually(() => server.openStreams() === 0, 'all streams released');
          expect(routing.inflight).to.equal(0);
        },
      ),
      { seed: 11, numRuns: 80 },
    );
  });
});
