/**
 * Property tests of the ext_proc edge under hostile input: random bodies, random message
 * orders, duplicates and truncations, random stream endings. Invariants: the handler never
 * throws, never answers a message twice or answers something it was not sent, never writes
 * after the stream ended or after a local reply, always finishes every ticket exactly once,
 * and (over real gRPC) other concurrent streams keep working.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { defaultConfig } from '../../src/config/loader.js';
import { extractPrompt } from '../../src/request/extract-prompt.js';
import { EdgeContext } from '../../src/extproc/edge-context.js';
import { ExtProcServer } from '../../src/extproc/ext-proc-server.js';
import type { EdgeStats } from '../../src/extproc/edge-stats.js';
import type { BodySendMode, ProcessingRequest, ProcessingResponse__Output } from '../../src/extproc/ext-proc-proto.js';
import { ManualClock, systemClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/logging/logger.js';
import { FakeRoutingService } from '../kit/fake-routing-service.js';
import { openScripted } from '../kit/scripted-stream.js';
import { connect, eventually, open } from '../kit/ext-proc-client.js';
import {
  chatBody,
  kindOf,
  requestBody,
  requestHeaders,
  requestTrailers,
  responseBody,
  responseHeaders,
  responseTrailers,
} from '../kit/ext-proc-messages.js';

const config = defaultConfig({ requests: { maxBodyBytes: 4096 } });
const MODES: (BodySendMode | undefined)[] = ['FULL_DUPLEX_STREAMED', 'BUFFERED', 'BUFFERED_PARTIAL', 'STREAMED', 'NONE', undefined];

const bodyArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.string({ maxLength: 200 }).map((s) => Buffer.from(chatBody(s), 'utf8')),
  fc.tuple(fc.string({ maxLength: 200 }), fc.nat()).map(([s, cut]) => {
    const b = Buffer.from(chatBody(s), 'utf8');
    return b.subarray(0, cut % (b.length + 1));
  }),
  fc.uint8Array({ maxLength: 300 }),
  fc.json({ maxDepth: 3 }).map((j) => Buffer.from(j, 'utf8')),
  fc.constant(new Uint8Array(5000)), // over maxBodyBytes
);

const headersArb: fc.Arbitrary<ProcessingRequest> = fc
  .record({
    method: fc.constantFrom('POST', 'GET', 'PUT'),
    path: fc.constantFrom('/v1/chat/completions', '/v1/completions?x=1', '/v1/models', '/other'),
    endOfStream: fc.boolean(),
    reqMode: fc.constantFrom(...MODES),
    respMode: fc.constantFrom<BodySendMode>('FULL_DUPLEX_STREAMED', 'STREAMED', 'BUFFERED', 'NONE'),
    subset: fc.option(fc.oneof(fc.constant([] as string[]), fc.subarray(['10.0.0.1:8000', '10.0.0.2:8000', '9.9.9.9:1'])), {
      nil: undefined,
    }),
    contentType: fc.constantFrom('application/json', 'text/plain', ''),
    encoding: fc.constantFrom('', 'gzip', 'identity'),
  })
  .map((r) =>
    requestHeaders({
      method: r.method,
      path: r.path,
      endOfStream: r.endOfStream,
      ...(r.reqMode !== undefined ? { requestBodyMode: r.reqMode, responseBodyMode: r.respMode } : {}),
      ...(r.subset !== undefined ? { subset: r.subset } : {}),
      headers: { 'content-type': r.contentType, ...(r.encoding !== '' ? { 'content-encoding': r.encoding } : {}) },
    }),
  );

const messageArb: fc.Arbitrary<ProcessingRequest> = fc.oneof(
  { weight: 2, arbitrary: headersArb },
  { weight: 4, arbitrary: fc.tuple(bodyArb, fc.boolean()).map(([b, eos]) => requestBody(b, eos)) },
  { weight: 1, arbitrary: fc.constant(requestTrailers()) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(200, 404, 500), fc.boolean()).map(([s, eos]) => responseHeaders(s, eos)) },
  { weight: 3, arbitrary: fc.tuple(fc.uint8Array({ maxLength: 100 }), fc.boolean()).map(([b, eos]) => responseBody(b, eos)) },
  { weight: 1, arbitrary: fc.constant(responseTrailers()) },
);

/** A well-formed conversation, then mutated: truncated, an element duplicated, two swapped. */
const wellFormedArb: fc.Arbitrary<ProcessingRequest[]> = fc
  .record({
    headers: headersArb,
    chunks: fc.array(bodyArb, { minLength: 1, maxLength: 3 }),
    trailers: fc.boolean(),
    response: fc.array(fc.uint8Array({ maxLength: 60 }), { maxLength: 3 }),
  })
  .map((r) => {
    const msgs: ProcessingRequest[] = [r.headers];
    for (const [i, c] of r.chunks.entries()) msgs.push(requestBody(c, !r.trailers && i === r.chunks.length - 1));
    if (r.trailers) msgs.push(requestTrailers());
    msgs.push(responseHeaders(200, r.response.length === 0));
    for (const [i, c] of r.response.entries()) msgs.push(responseBody(c, i === r.response.length - 1));
    return msgs;
  });

const scriptArb: fc.Arbitrary<ProcessingRequest[]> = fc.oneof(
  fc.array(messageArb, { maxLength: 10 }),
  wellFormedArb,
  fc
    .tuple(wellFormedArb, fc.nat(), fc.nat(), fc.nat(), fc.constantFrom('truncate', 'duplicate', 'swap', 'drop'))
    .map(([msgs, a, b, c, op]) => {
      const i = a % msgs.length;
      const j = b % msgs.length;
      const out = [...msgs];
      if (op === 'truncate') return out.slice(0, c % (msgs.length + 1));
      if (op === 'duplicate') out.splice(i, 0, msgs[i]!);
      else if (op === 'drop') out.splice(i, 1);
      else [out[i], out[j]] = [out[j]!, out[i]!];
      return out;
    }),
);

const endingArb = fc.constantFrom('cancel', 'halfClose', 'transportError');

type Kind = 'request_headers' | 'request_body' | 'request_trailers' | 'response_headers' | 'response_body' | 'response_trailers';

/** Invariants over what was sent and what was answered, in order. */
function checkAnswers(sent: readonly ProcessingRequest[], answers: readonly ProcessingResponse__Output[]): void {
  const sentCount = new Map<string, number>();
  for (const m of sent) {
    const k = (Object.keys(m) as string[]).find((x) => x.startsWith('request_') || x.startsWith('response_'))!;
    sentCount.set(k, (sentCount.get(k) ?? 0) + 1);
  }
  const answered = new Map<string, number>();
  let immediate = -1;
  answers.forEach((a, i) => {
    const k = kindOf(a);
    if (k === 'immediate_response') {
      expect(immediate, 'at most one local reply').to.equal(-1);
      immediate = i;
    } else {
      expect(immediate, 'nothing after a local reply').to.equal(-1);
    }
    answered.set(k, (answered.get(k) ?? 0) + 1);
  });
  for (const k of [
    'request_headers',
    'request_body',
    'request_trailers',
    'response_headers',
    'response_body',
    'response_trailers',
  ] as Kind[]) {
    expect(answered.get(k) ?? 0, `answers to ${k}`).to.be.at.most(sentCount.get(k) ?? 0);
  }
  expect(answered.get('request_headers') ?? 0).to.be.at.most(1);
  // Order within each direction: headers, then body chunks, then trailers (directions are
  // independent: an upstream may answer before the request body ended).
  const rank: Record<string, number> = {
    request_headers: 0,
    request_body: 1,
    request_trailers: 2,
    response_headers: 0,
    response_body: 1,
    response_trailers: 2,
  };
  for (const dir of ['request_', 'response_']) {
    const ranks = answers
      .map((a) => kindOf(a))
      .filter((k) => k.startsWith(dir))
      .map((k) => rank[k]!);
    for (let i = 1; i < ranks.length; i++) expect(ranks[i]!, `${dir} answers in order`).to.be.at.least(ranks[i - 1]!);
  }
  // Nothing on the response side is answered before the request headers were answered.
  const firstHeaders = answers.findIndex((a) => kindOf(a) === 'request_headers');
  const firstResponse = answers.findIndex((a) => kindOf(a).startsWith('response_'));
  if (firstResponse >= 0) expect(firstHeaders).to.be.within(0, firstResponse - 1);
}

class Stats implements EdgeStats {
  opened = 0;
  closed = 0;
  streamOpened(): void {
    this.opened++;
  }
  streamClosed(): void {
    this.closed++;
  }
  streamError(): void {}
}

describe('integration: ext_proc edge under random input (property)', function () {
  this.timeout(60000);

  it('handler: never throws, never answers twice or out of order, always finishes tickets', () => {
    fc.assert(
      fc.property(scriptArb, endingArb, (script, ending) => {
        const routing = new FakeRoutingService();
        const stats = new Stats();
        const edge = new EdgeContext({
          routing,
          extract: extractPrompt,
          requests: config.requests,
          decisionHeader: true,
          clock: new ManualClock(),
          logger: silentLogger,
          stats,
        });
        const s = openScripted(edge);
        s.feed(...script);
        if (ending === 'cancel') s.cancel();
        else if (ending === 'halfClose') s.halfClose();
        else s.transportError();
        s.cancel(); // Envoy resets after everything; must be harmless
        checkAnswers(script, s.stream.written);
        expect(s.stream.writesAfterClose).to.equal(0);
        expect(routing.inflight).to.equal(0);
        expect(routing.finishCalls).to.equal(routing.finished.length);
        expect(routing.finished.length).to.be.at.most(routing.requests.length);
        expect(stats.opened).to.equal(1);
        expect(stats.closed).to.equal(1);
      }),
      { seed: 20261129, numRuns: 1500 },
    );
  });

  it('handler: a well-formed conversation gets exactly one answer per message, in order', () => {
    fc.assert(
      fc.property(wellFormedArb, (script) => {
        const routing = new FakeRoutingService();
        const edge = new EdgeContext({
          routing,
          extract: extractPrompt,
          requests: config.requests,
          decisionHeader: false,
          clock: new ManualClock(),
          logger: silentLogger,
        });
        const s = openScripted(edge);
        s.feed(...script);
        const answers = s.stream.written;
        if (answers.some((a) => kindOf(a) === 'immediate_response') || s.stream.failed) return; // refused input
        checkAnswers(script, answers);
        // Exactly one answer per message. (A bodyless request's later chunks are a protocol error.)
        expect(answers).to.have.length(script.length);
        s.cancel();
        expect(routing.inflight).to.equal(0);
      }),
      { seed: 7, numRuns: 600 },
    );
  });

  it('server (grpc-js): random streams never disturb a concurrent well-formed stream, and everything is released', async () => {
    const routing = new FakeRoutingService();
    const edge = new EdgeContext({
      routing,
      extract: extractPrompt,
      requests: config.requests,
      decisionHeader: false,
      clock: systemClock,
      logger: silentLogger,
    });
    const server = new ExtProcServer({
      address: '127.0.0.1:0',
      maxReceiveMessageBytes: config.server.maxReceiveMessageBytes,
      edge,
      logger: silentLogger,
    });
    const { port } = await server.start();
    const client = connect(port);
    try {
      await fc.assert(
        fc.asyncProperty(scriptArb, fc.constantFrom('cancel', 'halfClose'), async (script, ending) => {
          const control = open(client);
          const noisy = open(client);
          noisy.send(...script);
          control.send(
            requestHeaders({ requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED' }),
            requestBody(chatBody('control'), true),
          );
          const ctrl = await control.waitFor(2);
          expect(ctrl.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
          control.send(responseHeaders(200), responseBody('{}', true));
          await control.waitFor(4);
          if (ending === 'halfClose') {
            noisy.halfClose();
            await noisy.finished; // OK, or an error status after a protocol violation
            checkAnswers(script, noisy.all);
          } else {
            noisy.cancel();
          }
          control.cancel();
          await eventually(() => server.openStreams() === 0, 'all streams released');
          expect(routing.inflight).to.equal(0);
        }),
        { seed: 99, numRuns: 60 },
      );
    } finally {
      client.close();
      await server.stop({ graceMs: 0 });
    }
  });
});
