import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { RouterError } from '../../../src/core/errors.js';
import { defaultConfig } from '../../../src/config/loader.js';
import type { RouterConfig } from '../../../src/config/types.js';
import { extractPrompt } from '../../../src/request/extract-prompt.js';
import { ECHO_MESSAGE_BYTES, joinBodyChunks } from '../../../src/extproc/body-chunks.js';
import { EdgeContext } from '../../../src/extproc/edge-context.js';
import type { EdgeOptions } from '../../../src/extproc/edge-context.js';
import type { EdgeStats } from '../../../src/extproc/edge-stats.js';
import type { ProcessingResponse__Output } from '../../../src/extproc/ext-proc-proto.js';
import { ManualClock } from '../../../src/util/clock.js';
import { createLogger, silentLogger } from '../../../src/logging/logger.js';
import { parseDecisionSummary } from '../../../src/extproc/decision-header.js';
import { FakeRoutingService } from '../../kit/fake-routing-service.js';
import { openScripted } from '../../kit/scripted-stream.js';
import {
  chatBody,
  headerValues,
  kindOf,
  requestBody,
  requestHeaders,
  requestTrailers,
  responseBody,
  responseHeaders,
  responseTrailers,
} from '../../kit/ext-proc-messages.js';

class CountingStats implements EdgeStats {
  opened = 0;
  closed = 0;
  errors: string[] = [];
  streamOpened(): void {
    this.opened++;
  }
  streamClosed(): void {
    this.closed++;
  }
  streamError(kind: string): void {
    this.errors.push(kind);
  }
}

interface Setup {
  routing: FakeRoutingService;
  edge: EdgeContext;
  stats: CountingStats;
  clock: ManualClock;
  config: RouterConfig;
  logLines: string[];
}

function setup(over: Partial<EdgeOptions> = {}, config: RouterConfig = defaultConfig()): Setup {
  const routing = new FakeRoutingService();
  const stats = new CountingStats();
  const clock = new ManualClock(1000);
  const logLines: string[] = [];
  const edge = new EdgeContext({
    routing,
    extract: extractPrompt,
    requests: config.requests,
    decisionHeader: false,
    clock,
    logger: createLogger({ level: 'debug', write: (l) => logLines.push(l) }),
    stats,
    newRequestId: () => 'generated-id',
    ...over,
  });
  return { routing, edge, stats, clock, config, logLines };
}

const FDS = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED' } as const;
const BUFFERED = { requestBodyMode: 'BUFFERED', responseBodyMode: 'STREAMED' } as const;

function immediate(msg: ProcessingResponse__Output | undefined): { status: string; body: unknown; headers: Record<string, string> } {
  expect(msg, 'an answer').to.not.equal(undefined);
  expect(kindOf(msg!)).to.equal('immediate_response');
  const ir = msg!.immediate_response!;
  return {
    status: String(ir.status?.code),
    body: JSON.parse(ir.body.toString('utf8')),
    headers: headerValues({ headers: ir.headers!.set_headers.map((o) => o.header!) }),
  };
}

function destinationHeader(msg: ProcessingResponse__Output): { value: string; append: boolean | undefined } {
  const common = msg.request_headers?.response ?? msg.request_body?.response;
  const opt = common!.header_mutation!.set_headers.find((o) => o.header!.key === 'x-gateway-destination-endpoint');
  expect(opt, 'destination header set').to.not.equal(undefined);
  return { value: opt!.header!.raw_value.toString('utf8'), append: opt!.append?.value };
}

function metadataOf(msg: ProcessingResponse__Output): { lb: string | undefined; destination: string | undefined } {
  const f = msg.dynamic_metadata?.fields;
  return {
    lb: f?.['envoy.lb']?.structValue?.fields?.['x-gateway-destination-endpoint']?.stringValue,
    destination: f?.['cacheroute']?.structValue?.fields?.['destination']?.stringValue,
  };
}

describe('extproc/stream-handler', () => {
  describe('FULL_DUPLEX_STREAMED inference request', () => {
    it('holds the headers answer until the body ends, then answers headers with the decision and gives the body back in one message', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      const body = Buffer.from(chatBody('hello there, this is a prompt'), 'utf8');
      const a = body.subarray(0, 20);
      const b = body.subarray(20);
      expect(s.feed(requestHeaders({ ...FDS, headers: { 'x-request-id': 'req-1' } }))).to.have.length(0);
      expect(s.feed(requestBody(a, false))).to.have.length(0);
      expect(routing.requests).to.have.length(0);
      const out = s.feed(requestBody(b, true));
      expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
      const common = out[0]!.request_headers!.response!;
      expect(common.status).to.equal('CONTINUE');
      expect(common.clear_route_cache).to.equal(true);
      const dest = destinationHeader(out[0]!);
      const decision = routing.finished.length === 0 ? s.handler.routed!.decision : undefined;
      expect(dest.value).to.equal(`${decision!.endpoint.id},${decision!.fallbacks.map((e) => e.id).join(',')}`);
      expect(dest.append).to.equal(false);
      const md = metadataOf(out[0]!);
      expect(md.lb).to.equal(dest.value);
      expect(md.destination).to.equal(decision!.endpoint.id);
      const echo = out[1]!.request_body!.response!.body_mutation!.streamed_response!;
      expect(echo.body.equals(body)).to.equal(true);
      expect(echo.end_of_stream).to.equal(true);
      const req = routing.requests[0]!;
      expect(req.requestId).to.equal('req-1');
      expect(req.model).to.equal('m1');
      expect(req.prefix).to.contain('hello there');
      expect(req.stream).to.equal(false);
      expect(req.arrivalMs).to.equal(1000);
      expect(req.subset).to.equal(undefined);
    });

    it('gives a body larger than one echo message back in order, joining chunks without splitting any', () => {
      const { edge } = setup();
      const s = openScripted(edge);
      // A chat body padded past two echo messages, in Envoy-sized chunks, then an empty end.
      const body = Buffer.from(chatBody('p'.repeat(2 * ECHO_MESSAGE_BYTES + 5000)), 'utf8');
      const sizes = [16384, 16384, 16384, 16384, 1];
      const chunks: Buffer[] = [];
      let at = 0;
      for (const n of sizes) {
        chunks.push(body.subarray(at, at + n));
        at += n;
      }
      chunks.push(body.subarray(at));
      s.feed(requestHeaders(FDS));
      for (const c of chunks) expect(s.feed(requestBody(c, false))).to.have.length(0);
      const out = s.feed(requestBody(Buffer.alloc(0), true));
      expect(out.map(kindOf)[0]).to.equal('request_headers');
      const echoes = out.slice(1).map((m) => m.request_body!.response!.body_mutation!.streamed_response!);
      expect(echoes.length).to.be.lessThan(chunks.length + 1);
      expect(Buffer.concat(echoes.map((e) => e.body)).equals(body)).to.equal(true);
      expect(echoes.map((e) => e.end_of_stream)).to.deep.equal(echoes.map((_, i) => i === echoes.length - 1));
      for (const e of echoes.slice(0, -1)) expect(e.body.length).to.be.greaterThan(0);
      const largestChunk = Math.max(...chunks.map((c) => c.length));
      for (const e of echoes) expect(e.body.length).to.be.at.most(Math.max(ECHO_MESSAGE_BYTES, largestChunk));
    });

    it('ends the body on request trailers: chunks echoed without end_of_stream, then the trailers answer', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders(FDS), requestBody(chatBody('x'), false));
      const out = s.feed(requestTrailers());
      expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body', 'request_trailers']);
      expect(out[1]!.request_body!.response!.body_mutation!.streamed_response!.end_of_stream).to.equal(false);
      expect(routing.requests).to.have.length(1);
    });

    it('assumes FULL_DUPLEX_STREAMED when Envoy sends no protocol_config', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      expect(s.feed(requestHeaders())).to.have.length(0);
      const out = s.feed(requestBody(chatBody('x'), true));
      expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
      expect(routing.requests).to.have.length(1);
    });

    it('answers 413 as soon as the collected body exceeds maxBodyBytes and ignores the rest', () => {
      const config = defaultConfig({ requests: { maxBodyBytes: 2048 } });
      const { edge, routing, stats } = setup({}, config);
      const s = openScripted(edge);
      expect(s.feed(requestHeaders(FDS), requestBody('x'.repeat(1500), false))).to.have.length(0);
      const out = s.feed(requestBody('y'.repeat(1500), false));
      expect(immediate(out[0]).status).to.equal('PayloadTooLarge');
      expect(immediate(out[0]).body).to.deep.equal({ error: { code: 'PAYLOAD_TOO_LARGE', message: 'request body exceeds 2048 bytes' } });
      expect(s.feed(requestBody('z', true))).to.have.length(0);
      expect(routing.requests).to.have.length(0);
      expect(stats.errors).to.deep.equal(['PAYLOAD_TOO_LARGE']);
    });
  });

  describe('BUFFERED inference request', () => {
    it('answers headers at once (CONTINUE) and puts the decision in the body answer', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      const h = s.feed(requestHeaders(BUFFERED));
      expect(h.map(kindOf)).to.deep.equal(['request_headers']);
      expect(h[0]!.request_headers!.response!.header_mutation).to.equal(null);
      expect(h[0]!.dynamic_metadata).to.equal(null);
      const out = s.feed(requestBody(chatBody('buffered prompt'), true));
      expect(out.map(kindOf)).to.deep.equal(['request_body']);
      const common = out[0]!.request_body!.response!;
      expect(common.clear_route_cache).to.equal(true);
      expect(common.body_mutation).to.equal(null);
      const dest = destinationHeader(out[0]!);
      expect(metadataOf(out[0]!).lb).to.equal(dest.value);
      expect(dest.value.split(',')[0]).to.equal(metadataOf(out[0]!).destination);
      expect(routing.requests[0]!.prefix).to.contain('buffered prompt');
    });

    it('routes a BUFFERED body followed by trailers and answers the trailers', () => {
      const { edge } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders(BUFFERED));
      expect(s.feed(requestBody(chatBody('t'), false)).map(kindOf)).to.deep.equal(['request_body']);
      expect(s.feed(requestTrailers()).map(kindOf)).to.deep.equal(['request_trailers']);
    });

    it('answers 413 for a BUFFERED_PARTIAL body that did not fit (end_of_stream false)', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders({ requestBodyMode: 'BUFFERED_PARTIAL' }));
      const out = s.feed(requestBody('{"model":"m1","messages":[{"role":"user","content":"trunc', false));
      expect(immediate(out[0]).status).to.equal('PayloadTooLarge');
      expect(routing.requests).to.have.length(0);
    });
  });

  describe('header-only body modes', () => {
    it('routes at the headers on load only when the request body mode is NONE', () => {
      const { edge, routing, logLines } = setup();
      const s = openScripted(edge);
      const out = s.feed(requestHeaders({ requestBodyMode: 'NONE' }));
      expect(out.map(kindOf)).to.deep.equal(['request_headers']);
      destinationHeader(out[0]!);
      expect(routing.requests[0]!.prefix).to.equal('');
      expect(logLines.filter((l) => l.includes('routing on load only'))).to.have.length(1);
    });

    it('answers STREAMED request body chunks with plain CONTINUE after routing at the headers', () => {
      const { edge } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders({ requestBodyMode: 'STREAMED' }));
      const out = s.feed(requestBody('abc', false), requestBody('def', true));
      expect(out.map(kindOf)).to.deep.equal(['request_body', 'request_body']);
      for (const m of out) {
        expect(m.request_body!.response!.body_mutation).to.equal(null);
        expect(m.request_body!.response!.header_mutation).to.equal(null);
      }
    });
  });

  describe('pass-through', () => {
    it('answers a bodyless non-inference request at once with CONTINUE and no decision', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      const out = s.feed(requestHeaders({ ...FDS, method: 'GET', path: '/v1/models', endOfStream: true }));
      expect(out.map(kindOf)).to.deep.equal(['request_headers']);
      expect(out[0]!.request_headers!.response!.header_mutation).to.equal(null);
      expect(out[0]!.dynamic_metadata).to.equal(null);
      expect(routing.requests).to.have.length(0);
    });

    it('echoes every body chunk of a non-inference FULL_DUPLEX_STREAMED request', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      expect(s.feed(requestHeaders({ ...FDS, path: '/v1/embeddings' })).map(kindOf)).to.deep.equal(['request_headers']);
      const out = s.feed(requestBody('part1', false), requestBody('part2', true));
      expect(out.map((m) => m.request_body!.response!.body_mutation!.streamed_response!.body.toString())).to.deep.equal(['part1', 'part2']);
      expect(out.map((m) => m.request_body!.response!.body_mutation!.streamed_response!.end_of_stream)).to.deep.equal([false, true]);
      expect(routing.requests).to.have.length(0);
    });

    it('treats a configured path with another method as pass-through, and ignores the query string for matching', () => {
      const { edge, routing } = setup();
      const get = openScripted(edge);
      expect(get.feed(requestHeaders({ ...FDS, method: 'GET', path: '/v1/chat/completions' })).map(kindOf)).to.deep.equal([
        'request_headers',
      ]);
      const q = openScripted(edge);
      expect(q.feed(requestHeaders({ ...FDS, path: '/v1/chat/completions?api-version=2' }))).to.have.length(0);
      q.feed(requestBody(chatBody('q'), true));
      expect(routing.requests).to.have.length(1);
    });

    it('removes a client-forged destination header on pass-through requests', () => {
      const { edge } = setup();
      const s = openScripted(edge);
      const out = s.feed(
        requestHeaders({
          method: 'GET',
          path: '/v1/models',
          endOfStream: true,
          headers: { 'x-gateway-destination-endpoint': '169.254.169.254:80' },
        }),
      );
      expect(out[0]!.request_headers!.response!.header_mutation!.remove_headers).to.deep.equal(['x-gateway-destination-endpoint']);
    });

    it('overwrites a client-forged destination header on inference requests (append=false)', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS, headers: { 'x-gateway-destination-endpoint': '169.254.169.254:80' } }));
      const out = s.feed(requestBody(chatBody('x'), true));
      const dest = destinationHeader(out[0]!);
      expect(dest.append).to.equal(false);
      expect(dest.value).to.not.contain('169.254.169.254');
      expect(routing.endpoints.map((e) => e.id)).to.include(dest.value.split(',')[0]);
    });

    it('writes nothing at all in observability mode', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      const out = s.feed(requestHeaders({ ...FDS, observability: true }), requestBody(chatBody('x'), true), responseHeaders(200));
      expect(out).to.have.length(0);
      expect(routing.requests).to.have.length(0);
    });
  });

  describe('subset hint and unavailable endpoints', () => {
    it('passes the subset hint (list form) and only a listed endpoint is chosen', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS, subset: ['10.0.0.3:8000'] }));
      const out = s.feed(requestBody(chatBody('x'), true));
      expect(routing.requests[0]!.subset).to.deep.equal(['10.0.0.3:8000']);
      expect(destinationHeader(out[0]!).value).to.equal('10.0.0.3:8000');
    });

    it('accepts the comma-joined string form of the subset hint', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS, subset: '10.0.0.2:8000, 10.0.0.3:8000' }), requestBody(chatBody('x'), true));
      expect(routing.requests[0]!.subset).to.deep.equal(['10.0.0.2:8000', '10.0.0.3:8000']);
    });

    it('answers 503 with a JSON body when the subset hint is present but empty, without asking the scheduler', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS, subset: [] }));
      const r = immediate(s.feed(requestBody(chatBody('x'), true))[0]);
      expect(r.status).to.equal('ServiceUnavailable');
      expect(r.headers['content-type']).to.equal('application/json');
      expect((r.body as { error: { code: string } }).error.code).to.equal('NO_ENDPOINT');
      expect(routing.requests).to.have.length(0);
    });

    it('answers 503 when no endpoint in the subset is known to the scheduler', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS, subset: ['192.168.9.9:1'] }));
      expect(immediate(s.feed(requestBody(chatBody('x'), true))[0]).status).to.equal('ServiceUnavailable');
      expect(routing.inflight).to.equal(0);
    });

    it('maps a scheduler OVERLOADED error to 429 and an unexpected exception to 500', () => {
      const { edge, routing, stats } = setup();
      routing.failWith = new RouterError('OVERLOADED', 'shed');
      const s1 = openScripted(edge);
      s1.feed(requestHeaders(FDS));
      expect(immediate(s1.feed(requestBody(chatBody('x'), true))[0]).status).to.equal('TooManyRequests');
      (routing as unknown as { failWith: unknown }).failWith = new TypeError('bug');
      const s2 = openScripted(edge);
      s2.feed(requestHeaders(FDS));
      expect(immediate(s2.feed(requestBody(chatBody('x'), true))[0]).status).to.equal('InternalServerError');
      expect(stats.errors).to.deep.equal(['OVERLOADED', 'INTERNAL']);
    });
  });

  describe('bad input on inference paths', () => {
    const cases: { name: string; headers?: Record<string, string>; body: string | Buffer; status: string; code: string }[] = [
      { name: 'malformed JSON', body: '{"model": "m1", "messages": [', status: 'BadRequest', code: 'BAD_REQUEST' },
      {
        name: 'explicit non-JSON content type',
        headers: { 'content-type': 'text/plain' },
        body: chatBody('x'),
        status: 'UnsupportedMediaType',
        code: 'UNSUPPORTED_MEDIA',
      },
      {
        name: 'gzip content-encoding',
        headers: { 'content-encoding': 'gzip' },
        body: chatBody('x'),
        status: 'UnsupportedMediaType',
        code: 'UNSUPPORTED_MEDIA',
      },
      {
        name: 'br content-encoding',
        headers: { 'content-encoding': 'br' },
        body: chatBody('x'),
        status: 'UnsupportedMediaType',
        code: 'UNSUPPORTED_MEDIA',
      },
      {
        name: 'deflate content-encoding',
        headers: { 'content-encoding': 'deflate' },
        body: chatBody('x'),
        status: 'UnsupportedMediaType',
        code: 'UNSUPPORTED_MEDIA',
      },
      { name: 'empty body', body: '', status: 'BadRequest', code: 'BAD_REQUEST' },
      {
        name: 'declared content-length above the limit',
        headers: { 'content-length': String(64 * 1024 * 1024) },
        body: chatBody('x'),
        status: 'PayloadTooLarge',
        code: 'PAYLOAD_TOO_LARGE',
      },
    ];
    for (const mode of [FDS, BUFFERED]) {
      for (const c of cases) {
        it(`${c.name} → ${c.status} (${mode.requestBodyMode})`, () => {
          const { edge, routing, stats } = setup();
          const s = openScripted(edge);
          const out = [...s.feed(requestHeaders({ ...mode, headers: c.headers ?? {} }))];
          if (out.every((m) => kindOf(m) !== 'immediate_response')) out.push(...s.feed(requestBody(c.body, true)));
          const last = out[out.length - 1];
          const r = immediate(last);
          expect(r.status).to.equal(c.status);
          expect((r.body as { error: { code: string } }).error.code).to.equal(c.code);
          expect(routing.requests).to.have.length(0);
          expect(stats.errors).to.deep.equal([c.code]);
          s.cancel();
          expect(stats.closed).to.equal(1);
        });
      }
    }

    it('answers 400 for an inference request without a body (end_of_stream on the headers)', () => {
      const { edge } = setup();
      const s = openScripted(edge);
      const r = immediate(s.feed(requestHeaders({ ...FDS, endOfStream: true }))[0]);
      expect(r.status).to.equal('BadRequest');
    });

    it('accepts JSON media types with parameters or a +json suffix, and identity encoding', () => {
      const { edge, routing } = setup();
      const variants: Record<string, string>[] = [
        { 'content-type': 'application/json; charset=utf-8' },
        { 'content-type': 'application/vnd.openai+json' },
        { 'content-encoding': 'identity' },
      ];
      for (const headers of variants) {
        const s = openScripted(edge);
        s.feed(requestHeaders({ ...FDS, headers }));
        expect(kindOf(s.feed(requestBody(chatBody('x'), true))[0]!)).to.equal('request_headers');
      }
      expect(routing.requests).to.have.length(3);
    });

    it('routes a body with invalid UTF-8 (decoded with replacement characters)', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      const prefix = Buffer.from('{"model":"m1","messages":[{"role":"user","content":"bad ', 'utf8');
      const suffix = Buffer.from(' bytes"}]}', 'utf8');
      s.feed(requestHeaders(FDS));
      const out = s.feed(requestBody(Buffer.concat([prefix, Buffer.from([0xff, 0xfe]), suffix]), true));
      expect(kindOf(out[0]!)).to.equal('request_headers');
      expect(routing.requests[0]!.prefix).to.contain('\ufffd');
    });

    it('never puts prompt text into log lines', () => {
      const { edge, logLines } = setup();
      const secret = 'SECRET-PROMPT-TEXT-42';
      const s = openScripted(edge);
      s.feed(requestHeaders(FDS), requestBody(chatBody(secret), true), responseHeaders(200), responseBody(`{"x":"${secret}"}`, true));
      const bad = openScripted(edge);
      bad.feed(requestHeaders(FDS), requestBody(`{"model":"m1","messages":[{"role":"user","content":"${secret}"`, true));
      expect(logLines.length).to.be.greaterThan(0);
      for (const l of logLines) expect(l).to.not.contain(secret);
    });
  });

  describe('response path and ticket accounting', () => {
    function routed(over: Partial<EdgeOptions> = {}, mode: typeof FDS | typeof BUFFERED = FDS, metadata: Record<string, string> = {}) {
      const t = setup(over);
      const s = openScripted(t.edge, metadata);
      s.feed(
        requestHeaders({
          ...mode,
          headers: { 'x-request-id': 'r-9', traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01' },
        }),
      );
      s.feed(requestBody(chatBody('route me'), true));
      expect(t.routing.inflight).to.equal(1);
      return { ...t, s };
    }

    it('echoes FULL_DUPLEX_STREAMED response chunks, sniffs SSE usage and finishes the ticket once with status and usage', () => {
      const { s, routing } = routed();
      const sse = [
        'data: {"choices":[{"delta":{"content":"Hi"}}],"usage":null}\n\n',
        'data: {"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":96}}}\n\n',
        'data: [DONE]\n\n',
      ];
      const h = s.feed(responseHeaders(200, false, { 'content-type': 'text/event-stream' }, '10.0.0.2:8000'));
      expect(h.map(kindOf)).to.deep.equal(['response_headers']);
      expect(routing.firstBytes).to.equal(0, 'SSE headers come before the first token');
      s.feed(responseBody('', false));
      expect(routing.firstBytes).to.equal(0, 'an empty chunk is not a first byte');
      const first = s.feed(responseBody(sse[0]!, false));
      expect(routing.firstBytes).to.equal(1, 'the first token ends the prefill');
      const out = [...first, ...s.feed(responseBody(sse[1]!, false), responseBody(sse[2]!, true))];
      expect(out.map((m) => m.response_body!.response!.body_mutation!.streamed_response!.body.toString())).to.deep.equal(sse);
      expect(out.map((m) => m.response_body!.response!.body_mutation!.streamed_response!.end_of_stream)).to.deep.equal([
        false,
        false,
        true,
      ]);
      expect(routing.firstBytes).to.equal(1);
      expect(routing.inflight).to.equal(0);
      expect(routing.finished).to.have.length(1);
      expect(routing.finished[0]!.outcome).to.deep.include({
        aborted: false,
        status: 200,
        promptTokens: 120,
        completionTokens: 7,
        cachedTokens: 96,
        servedBy: '10.0.0.2:8000',
      });
      s.cancel(); // Envoy cancels even after success
      expect(routing.finishCalls).to.equal(1);
    });

    it('answers STREAMED response chunks with CONTINUE and reads usage from a JSON response', () => {
      const { s, routing } = routed({}, BUFFERED);
      s.feed(responseHeaders(200));
      const out = s.feed(
        responseBody('{"id":"x","choices":[{"message":{"content":"ok"}}],', false),
        responseBody('"usage":{"prompt_tokens":10,"completion_tokens":2}}', true),
      );
      for (const m of out) expect(m.response_body!.response!.body_mutation).to.equal(null);
      expect(routing.finished[0]!.outcome).to.deep.include({ aborted: false, promptTokens: 10, completionTokens: 2 });
      expect(routing.finished[0]!.outcome.cachedTokens).to.equal(undefined);
    });

    it('finishes on response trailers and on a bodyless response', () => {
      const a = routed();
      a.s.feed(responseHeaders(200), responseBody('{}', false));
      expect(a.routing.inflight).to.equal(1);
      expect(a.s.feed(responseTrailers()).map(kindOf)).to.deep.equal(['response_trailers']);
      expect(a.routing.inflight).to.equal(0);
      const b = routed();
      b.s.feed(responseHeaders(204, true));
      expect(b.routing.finished[0]!.outcome).to.deep.include({ aborted: false, status: 204 });
    });

    it('adds x-cacheroute-decision to the response headers when enabled', () => {
      const { s } = routed({ decisionHeader: true });
      const h = s.feed(responseHeaders(200));
      const set = headerValues({ headers: h[0]!.response_headers!.response!.header_mutation!.set_headers.map((o) => o.header!) });
      const summary = parseDecisionSummary(set['x-cacheroute-decision']!);
      expect(summary['ep']).to.equal(s.handler.routed!.decision.endpoint.id);
      expect(summary['strategy']).to.equal('fake');
    });

    it('does not add the decision header when disabled or when the request was not routed', () => {
      const { s } = routed();
      expect(s.feed(responseHeaders(200))[0]!.response_headers!.response!.header_mutation).to.equal(null);
      const { edge } = setup({ decisionHeader: true });
      const p = openScripted(edge);
      p.feed(requestHeaders({ method: 'GET', path: '/health', endOfStream: true }));
      expect(p.feed(responseHeaders(200))[0]!.response_headers!.response!.header_mutation).to.equal(null);
    });

    it('releases the ticket as aborted when the stream is cancelled mid-response (in-flight returns to zero)', () => {
      const { s, routing, stats } = routed();
      s.feed(responseHeaders(200), responseBody('data: {"choices":[]}\n\n', false));
      s.cancel();
      expect(routing.inflight).to.equal(0);
      expect(routing.finished[0]!.outcome).to.deep.include({ aborted: true, status: 200 });
      expect(stats.errors).to.deep.equal(['ABORTED']);
      s.cancel();
      s.transportError();
      expect(routing.finishCalls).to.equal(1);
      expect(stats.closed).to.equal(1);
      expect(s.feed(responseBody('more', true))).to.have.length(0);
    });

    it('releases the ticket when cancelled before any response, and on a transport error', () => {
      const a = routed();
      a.s.cancel();
      expect(a.routing.inflight).to.equal(0);
      expect(a.routing.finished[0]!.outcome.aborted).to.equal(true);
      const b = routed();
      b.s.transportError();
      expect(b.routing.inflight).to.equal(0);
      expect(b.stats.errors).to.include('TRANSPORT');
    });

    it('with response body mode NONE, seeing the response headers counts as complete at stream end', () => {
      const t = setup();
      const s = openScripted(t.edge);
      s.feed(requestHeaders({ requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'NONE' }), requestBody(chatBody('x'), true));
      s.feed(responseHeaders(200));
      expect(t.routing.inflight).to.equal(1);
      s.cancel();
      expect(t.routing.finished[0]!.outcome).to.deep.include({ aborted: false, status: 200 });
    });

    it('ends its side with OK on a graceful half-close', () => {
      const { s, routing } = routed();
      s.feed(responseHeaders(200), responseBody('{}', true));
      s.halfClose();
      expect(s.stream.ended).to.equal(true);
      expect(routing.finishCalls).to.equal(1);
      expect(s.stream.writesAfterClose).to.equal(0);
    });

    it('takes trace context from the gRPC metadata first, falling back to the HTTP traceparent header', () => {
      const viaGrpc = routed({}, FDS, { traceparent: '00-ffffffffffffffffffffffffffffffff-1111111111111111-01', tracestate: 'a=b' });
      expect(viaGrpc.routing.requests[0]!.traceparent).to.equal('00-ffffffffffffffffffffffffffffffff-1111111111111111-01');
      expect(viaGrpc.routing.requests[0]!.tracestate).to.equal('a=b');
      const viaHeader = routed();
      expect(viaHeader.routing.requests[0]!.traceparent).to.equal('00-0123456789abcdef0123456789abcdef-0123456789abcdef-01');
    });

    it('hands the request headers to the plugins (the session scorer reads its own header) and generates a request id when absent', () => {
      const config = defaultConfig({
        strategy: { name: 'cache-aware', plugins: { 'session-affinity-scorer': { header: 'X-Session-Id' } } },
      });
      const { edge, routing } = setup({}, config);
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS, headers: { 'x-session-id': 'sess-7' } }), requestBody(chatBody('x'), true));
      expect(routing.requests[0]!.headers?.get('x-session-id')).to.equal('sess-7');
      expect(routing.requests[0]!.requestId).to.equal('generated-id');
    });
  });

  describe('protocol violations', () => {
    it('ends the stream with INVALID_ARGUMENT on a body before the headers, writing nothing', () => {
      const { edge, stats } = setup();
      const s = openScripted(edge);
      expect(s.feed(requestBody('x', true))).to.have.length(0);
      expect(s.stream.failed?.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
      expect(stats.errors).to.deep.equal(['PROTOCOL']);
      expect(stats.closed).to.equal(1);
      expect(s.feed(requestHeaders(FDS))).to.have.length(0);
    });

    it('releases a routed ticket when Envoy breaks the protocol (response headers twice)', () => {
      const { edge, routing } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders(FDS), requestBody(chatBody('x'), true), responseHeaders(200));
      expect(s.feed(responseHeaders(200))).to.have.length(0);
      expect(s.stream.failed?.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
      expect(routing.inflight).to.equal(0);
      expect(routing.finished[0]!.outcome.aborted).to.equal(true);
    });

    it('rejects response messages while the request is still held', () => {
      const { edge } = setup();
      const s = openScripted(edge);
      s.feed(requestHeaders(FDS), requestBody('{"model":', false));
      s.feed(responseHeaders(200));
      expect(s.stream.failed).to.not.equal(undefined);
      expect(s.stream.written).to.have.length(0);
    });

    it('counts one open and one close per stream whatever happens', () => {
      const { edge, stats } = setup({ logger: silentLogger });
      const a = openScripted(edge);
      a.feed(requestHeaders(FDS), requestBody(chatBody('x'), true));
      a.halfClose();
      a.cancel();
      const b = openScripted(edge);
      b.feed(requestBody('x', true));
      b.cancel();
      expect(stats.opened).to.equal(2);
      expect(stats.closed).to.equal(2);
    });
  });

  describe('joinBodyChunks', () => {
    const b = (text: string): Buffer => Buffer.from(text, 'utf8');
    const texts = (pieces: Buffer[]): string[] => pieces.map((p) => p.toString('utf8'));
    const join = (chunks: Buffer[], limit: number): Buffer[] =>
      joinBodyChunks(
        Buffer.concat(chunks),
        chunks.map((c) => c.length),
        limit,
      );

    it('joins consecutive chunks up to the limit, in order', () => {
      expect(texts(join([b('ab'), b('cd'), b('ef'), b('g')], 4))).to.deep.equal(['abcd', 'efg']);
    });

    it('keeps a chunk longer than the limit whole, on its own', () => {
      expect(texts(join([b('a'), b('bcdefg'), b('h')], 4))).to.deep.equal(['a', 'bcdefg', 'h']);
    });

    it('drops empty chunks, and gives one empty piece for an empty body', () => {
      expect(texts(join([b(''), b('ab'), b(''), b('c'), b('')], 8))).to.deep.equal(['abc']);
      expect(texts(join([b(''), b('')], 8))).to.deep.equal(['']);
      expect(texts(join([], 8))).to.deep.equal(['']);
    });
  });
});
