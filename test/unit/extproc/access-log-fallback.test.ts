/**
 * Access-log completion when the gateway may send no access log: until an entry proves the
 * log reaches the router, a ticket waits for it at most logWaitMs; then the log counts as
 * absent, a stream that carries the response finishes its own ticket, and one that does not
 * finishes it when it ends. Driven message by message, manual clock.
 */
import { expect } from 'chai';
import { defaultConfig } from '../../../src/config/loader.js';
import { AccessLogCompletion } from '../../../src/extproc/completion-mode.js';
import { EdgeContext } from '../../../src/extproc/edge-context.js';
import { PendingResponses } from '../../../src/extproc/pending-responses.js';
import { AccessLogReceiver } from '../../../src/extproc/access-log-receiver.js';
import type { HTTPAccessLogEntry__Output } from '../../../src/extproc/access-log-proto.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { extractPrompt } from '../../../src/request/extract-prompt.js';
import { ManualClock } from '../../../src/util/clock.js';
import { FakeRoutingService } from '../../kit/fake-routing-service.js';
import { chatBody, kindOf, requestBody, requestHeaders, responseBody, responseHeaders } from '../../kit/ext-proc-messages.js';
import { openScripted } from '../../kit/scripted-stream.js';

const WAIT_MS = 10_000;
/** Envoy sends the router the response (a gateway with processingMode.response and no log). */
const THROUGH = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED' } as const;
/** Envoy sends the router the request only. */
const REQUEST_ONLY = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'NONE' } as const;

function setup() {
  const routing = new FakeRoutingService();
  const clock = new ManualClock(1000);
  const pending = new PendingResponses({ clock, maxAgeMs: 600_000, owner: 'p', nonce: () => 'n', logWaitMs: WAIT_MS });
  const edge = new EdgeContext({
    routing,
    extract: extractPrompt,
    requests: defaultConfig().requests,
    decisionHeader: false,
    clock,
    logger: silentLogger,
    completion: new AccessLogCompletion(pending),
  });
  return { routing, clock, pending, edge, receiver: new AccessLogReceiver(pending, silentLogger) };
}

function logEntry(key: string): HTTPAccessLogEntry__Output {
  return {
    common_properties: {
      metadata: { filter_metadata: { cacheroute: { fields: { ticket: { stringValue: key, kind: 'stringValue' } } } } },
      access_log_type: 'DownstreamEnd',
    },
    response: { response_code: { value: 200 } },
  } as unknown as HTTPAccessLogEntry__Output;
}

const route = (edge: EdgeContext, mode: typeof THROUGH | typeof REQUEST_ONLY, q: string) => {
  const s = openScripted(edge);
  const out = s.feed(requestHeaders(mode), requestBody(chatBody(q), true));
  const key = out[0]!.dynamic_metadata?.fields['cacheroute']?.structValue?.fields['ticket']?.stringValue ?? undefined;
  return { s, key: key!, out };
};

/** A setup whose router has waited logWaitMs for a log that never came. */
function absentSetup() {
  const o = setup();
  route(o.edge, REQUEST_ONLY, 'probe');
  o.clock.advance(WAIT_MS + 1);
  o.pending.sweep();
  expect(o.pending.accessLog).to.equal('absent');
  o.routing.finished.length = 0;
  return o;
}

describe('extproc: access-log completion without an access log', () => {
  it('once the log is absent, keeps a stream that carries the response and finishes the ticket exactly when it ends', () => {
    const { routing, pending, edge } = absentSetup();
    const { s, key } = route(edge, THROUGH, 'streams');
    expect(key, 'the key still rides in the metadata').to.equal('p.1.n');
    expect(s.stream.ended, 'stream kept: no log will report it').to.equal(false);
    s.feed(responseHeaders(200), responseBody('data: {"x":1}\n\n', false));
    expect(routing.inflight, 'counted while the response streams').to.equal(1);
    s.feed(responseBody('data: [DONE]\n\n', true));
    expect(routing.inflight).to.equal(0);
    expect(routing.finished[0]!.outcome).to.include({ aborted: false, status: 200 });
    s.cancel(); // Envoy's reset at the end of the request changes nothing
    expect(routing.finishCalls).to.equal(2);
    expect(pending.snapshot()).to.deep.include({ pending: 0, byStream: 1, completed: 0, unconfirmed: 1, accessLog: 'absent' });
  });

  it('finishes a response cut mid-stream as aborted, from the stream', () => {
    const { routing, edge } = absentSetup();
    const { s } = route(edge, THROUGH, 'cut');
    s.feed(responseHeaders(200), responseBody('data: {"x":1}\n\n', false));
    s.cancel();
    expect(routing.inflight).to.equal(0);
    expect(routing.finished[0]!.outcome.aborted).to.equal(true);
  });

  it('lets a request-only stream go, waits logWaitMs for the log, then takes it as absent and ends later tickets with their streams', () => {
    const { routing, clock, pending, edge } = setup();
    const first = route(edge, REQUEST_ONLY, 'a');
    expect(first.out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    expect(first.s.stream.ended, 'nothing more can come on it').to.equal(true);
    expect(routing.inflight).to.equal(1);
    clock.advance(WAIT_MS);
    expect(pending.sweep()).to.equal(0);
    expect(routing.inflight, 'still waiting for the log').to.equal(1);
    clock.advance(1);
    expect(pending.sweep()).to.equal(1);
    expect(routing.inflight).to.equal(0);
    expect(routing.finished[0]!.outcome.aborted, 'its stream ended; how is unknown, not an abort').to.equal(false);
    expect(pending.snapshot()).to.deep.include({ accessLog: 'absent', unconfirmed: 1, pending: 0 });
    const later = route(edge, REQUEST_ONLY, 'b');
    expect(later.s.stream.ended).to.equal(true);
    expect(routing.inflight, 'ended with its stream once the log is absent').to.equal(0);
    expect(pending.snapshot().byStream).to.equal(1);
  });

  it('trusts the log once an entry names one of its tickets: streams go after the request side, entries finish tickets', () => {
    const { routing, clock, pending, edge, receiver } = setup();
    const a = route(edge, THROUGH, 'a');
    expect(a.s.stream.ended, 'let go while the log is unknown').to.equal(true);
    expect(routing.inflight).to.equal(1);
    receiver.onMessage({ identifier: null, log_entries: 'http_logs', http_logs: { log_entry: [logEntry(a.key)] } });
    expect(pending.accessLog).to.equal('present');
    expect(routing.inflight).to.equal(0);
    const b = route(edge, THROUGH, 'b');
    expect(b.s.stream.ended, 'released: the log will report it').to.equal(true);
    clock.advance(WAIT_MS * 10);
    pending.sweep();
    expect(routing.inflight, 'waits for its entry (up to maxAgeMs), not logWaitMs').to.equal(1);
    receiver.onMessage({ identifier: null, log_entries: 'http_logs', http_logs: { log_entry: [logEntry(b.key)] } });
    expect(routing.inflight).to.equal(0);
    expect(pending.snapshot()).to.deep.include({ completed: 2, byStream: 0, unconfirmed: 0 });
  });

  it('an entry arriving while tickets wait makes the log present again, and they wait for their entries', () => {
    const { routing, clock, pending, edge, receiver } = setup();
    const a = route(edge, REQUEST_ONLY, 'a');
    const b = route(edge, REQUEST_ONLY, 'b');
    clock.advance(WAIT_MS / 2);
    receiver.onMessage({ identifier: null, log_entries: 'http_logs', http_logs: { log_entry: [logEntry(a.key)] } });
    clock.advance(WAIT_MS);
    pending.sweep();
    expect(routing.inflight, 'b waits for its own entry').to.equal(1);
    receiver.onMessage({ identifier: null, log_entries: 'http_logs', http_logs: { log_entry: [logEntry(b.key)] } });
    expect(routing.inflight).to.equal(0);
    expect(pending.snapshot()).to.deep.include({ accessLog: 'present', unconfirmed: 0 });
  });
});
