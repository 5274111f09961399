import { expect } from 'chai';
import { extractPrompt } from '../../../src/request/extract-prompt.js';
import { defaultConfig } from '../../../src/config/loader.js';
import { AccessLogCompletion } from '../../../src/extproc/completion-mode.js';
import { EdgeContext } from '../../../src/extproc/edge-context.js';
import { PendingResponses } from '../../../src/extproc/pending-responses.js';
import { AccessLogReceiver, outcomeOf } from '../../../src/extproc/access-log-receiver.js';
import type { HTTPAccessLogEntry__Output } from '../../../src/extproc/access-log-proto.js';
import { ManualClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { parseDecisionSummary } from '../../../src/extproc/decision-header.js';
import { FakeRoutingService } from '../../kit/fake-routing-service.js';
import { openScripted } from '../../kit/scripted-stream.js';
import { chatBody, kindOf, requestBody, requestHeaders, requestTrailers } from '../../kit/ext-proc-messages.js';

const FDS_NONE = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'NONE' } as const;

function entry(over: {
  key?: string;
  code?: number;
  flags?: Record<string, boolean>;
  upstream?: string;
  type?: string;
  tags?: Record<string, string>;
}): HTTPAccessLogEntry__Output {
  const [address, port] = (over.upstream ?? '10.0.0.2:8000').split(':');
  return {
    common_properties: {
      time_to_first_upstream_rx_byte: null,
      time_to_last_upstream_rx_byte: null,
      upstream_remote_address: {
        socket_address: { address: address!, port_value: Number(port), port_specifier: 'port_value' },
        address: 'socket_address',
      },
      upstream_cluster: 'engines',
      response_flags: over.flags ?? null,
      metadata:
        over.key === undefined
          ? null
          : {
              filter_metadata: { cacheroute: { fields: { ticket: { stringValue: over.key, kind: 'stringValue' } } } },
              typed_filter_metadata: {},
            },
      duration: null,
      upstream_request_attempt_count: 1,
      access_log_type: over.type ?? 'DownstreamEnd',
      ...(over.tags !== undefined ? { custom_tags: over.tags } : {}),
    },
    response: over.code === undefined ? null : { response_code: { value: over.code }, response_body_bytes: '0', response_code_details: '' },
  } as unknown as HTTPAccessLogEntry__Output;
}

function setup(decisionHeader = false, replicaId?: string) {
  const routing = new FakeRoutingService();
  const clock = new ManualClock(1000);
  const pending = new PendingResponses({ clock, maxAgeMs: 60_000, owner: 'p', nonce: () => 'n' });
  const config = defaultConfig();
  const edge = new EdgeContext({
    routing,
    extract: extractPrompt,
    requests: config.requests,
    decisionHeader,
    clock,
    logger: silentLogger,
    completion: new AccessLogCompletion(pending),
    ...(replicaId !== undefined ? { replicaId } : {}),
  });
  const receiver = new AccessLogReceiver(pending, silentLogger);
  return { routing, clock, pending, edge, receiver };
}

function ticketOf(answer: ReturnType<ReturnType<typeof openScripted>['feed']>[number]): { ticket?: string; decision?: string } {
  const f = answer.dynamic_metadata?.fields['cacheroute']?.structValue?.fields ?? {};
  return { ticket: f['ticket']?.stringValue ?? undefined, decision: f['decision']?.stringValue ?? undefined };
}

describe('extproc: access-log completion (pending responses + receiver)', () => {
  it('hands the ticket over at the decision, names its key in the metadata and ends the stream with OK', () => {
    const { routing, edge, pending } = setup();
    const s = openScripted(edge);
    const out = s.feed(requestHeaders(FDS_NONE), requestBody(chatBody('hi'), true));
    expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    expect(ticketOf(out[0]!).ticket).to.equal('p.0.n');
    expect(s.stream.ended, 'stream ended by the router').to.equal(true);
    expect(s.handler.state).to.equal('closed');
    expect(routing.inflight, 'still in flight: the access log ends it').to.equal(1);
    expect(pending.size).to.equal(1);
    s.cancel();
    expect(routing.inflight).to.equal(1);
  });

  it('closes only after request trailers when the request has them', () => {
    const { edge } = setup();
    const s = openScripted(edge);
    s.feed(requestHeaders(FDS_NONE), requestBody(chatBody('hi'), false));
    const out = s.feed(requestTrailers());
    expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body', 'request_trailers']);
    expect(s.stream.ended).to.equal(true);
  });

  it('finishes the ticket from the access log entry naming its key: status, served host, aborts', () => {
    const { routing, edge, pending, receiver } = setup();
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = openScripted(edge);
      keys.push(ticketOf(s.feed(requestHeaders(FDS_NONE), requestBody(chatBody(`q${i}`), true))[0]!).ticket!);
    }
    expect(routing.inflight).to.equal(3);
    receiver.onMessage({
      identifier: null,
      log_entries: 'http_logs',
      http_logs: {
        log_entry: [
          entry({ key: keys[0], code: 200, upstream: '10.0.0.3:8000' }),
          entry({ key: keys[1], code: 200, flags: { downstream_connection_termination: true } }),
          entry({ key: 'q.7.ffffff', code: 200 }),
          entry({ key: 'p.99.n', code: 200 }),
          entry({ code: 404 }),
        ],
      },
    });
    expect(routing.inflight).to.equal(1);
    expect(routing.finished.map((f) => f.outcome)).to.deep.equal([
      { aborted: false, status: 200, servedBy: '10.0.0.3:8000' },
      { aborted: true, status: 200, servedBy: '10.0.0.2:8000' },
    ]);
    expect(pending.snapshot()).to.deep.include({ pending: 1, completed: 2, unknown: 1 });
    // Another owner's ticket with no forwarder (replication off) is foreign and ignored.
    expect(receiver.snapshot()).to.deep.include({ entries: 5, unrouted: 1, foreign: 1, forwarded: 0 });
    // A second entry for a finished key changes nothing.
    receiver.onMessage({ identifier: null, log_entries: 'http_logs', http_logs: { log_entry: [entry({ key: keys[0], code: 500 })] } });
    expect(routing.finished).to.have.length(2);
    expect(routing.finishCalls).to.equal(2);
  });

  it('counts routed entries without the first-body tag as untimed, and warns once when a TTFT model wants the timing', () => {
    const { edge, pending } = setup();
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (msg: string) => void warnings.push(msg) };
    const receiver = new AccessLogReceiver(pending, logger, undefined, true);
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = openScripted(edge);
      keys.push(ticketOf(s.feed(requestHeaders(FDS_NONE), requestBody(chatBody(`t${i}`), true))[0]!).ticket!);
    }
    receiver.onMessage({
      identifier: null,
      log_entries: 'http_logs',
      http_logs: {
        log_entry: [
          // Tagged (a value, or empty when the request had no body): timed or not, the logger has the tag.
          entry({ key: keys[0], code: 200, tags: { 'cacheroute.first_body_us': '250000' } }),
          entry({ key: keys[1], code: 200, tags: { 'cacheroute.first_body_us': '' } }),
          entry({ key: keys[2], code: 200 }),
          entry({ code: 404 }),
        ],
      },
    });
    expect(receiver.snapshot()).to.deep.include({ entries: 4, unrouted: 1, untimed: 1 });
    expect(warnings.filter((w) => w.includes('cacheroute.first_body_us'))).to.have.length(1);
    // Without a TTFT model the count stays, the warning does not come.
    const quiet: string[] = [];
    const other = new AccessLogReceiver(pending, { ...silentLogger, warn: (msg: string) => void quiet.push(msg) });
    other.onMessage({ identifier: null, log_entries: 'http_logs', http_logs: { log_entry: [entry({ key: 'p.1.n', code: 200 })] } });
    expect(other.snapshot().untimed).to.equal(1);
    expect(quiet).to.deep.equal([]);
  });

  it('reads upstream resets, missing status and IPv6 hosts as such; ignores intermediate entries', () => {
    expect(outcomeOf(entry({ code: 200, flags: { upstream_remote_reset: true } })).aborted).to.equal(true);
    expect(outcomeOf(entry({}))).to.deep.include({ aborted: true });
    expect(outcomeOf(entry({ code: 503 }))).to.deep.equal({ aborted: false, status: 503, servedBy: '10.0.0.2:8000' });
    const sized = entry({ code: 200 });
    (sized.response as { response_body_bytes: string }).response_body_bytes = '4242';
    expect(outcomeOf(sized).responseBytes, 'the body size (the traffic trace estimates output tokens from it)').to.equal(4242);
    const v6 = entry({ code: 200 });
    (v6.common_properties!.upstream_remote_address!.socket_address as { address: string }).address = 'fd00::1';
    expect(outcomeOf(v6).servedBy).to.equal('[fd00::1]:8000');
    const tagged = (v: string): HTTPAccessLogEntry__Output => {
      const e = entry({ code: 200 });
      (e.common_properties as { custom_tags: Record<string, string> }).custom_tags = { 'cacheroute.first_body_us': v };
      return e;
    };
    expect(outcomeOf(tagged('183250')).firstBodyMs, 'the first body byte after the request went upstream').to.equal(183.25);
    for (const bad of ['', '-5', '1e9', '12.5', ' 7', '99999999999999']) {
      expect(outcomeOf(tagged(bad)), `tag ${JSON.stringify(bad)}`).to.not.have.property('firstBodyMs');
    }
    expect(outcomeOf(entry({ code: 200 }))).to.not.have.property('firstBodyMs');
    const { routing, edge, receiver } = setup();
    const s = openScripted(edge);
    const key = ticketOf(s.feed(requestHeaders(FDS_NONE), requestBody(chatBody('q'), true))[0]!).ticket!;
    receiver.onMessage({
      identifier: null,
      log_entries: 'http_logs',
      http_logs: { log_entry: [entry({ key, code: 200, type: 'DownstreamPeriodic' })] },
    });
    expect(routing.inflight).to.equal(1);
  });

  it('expires a ticket whose entry never came after maxAgeMs (aborted), and finishes the rest on stop', () => {
    const { routing, edge, clock, pending } = setup();
    openScripted(edge).feed(requestHeaders(FDS_NONE), requestBody(chatBody('old'), true));
    clock.advance(50_000);
    openScripted(edge).feed(requestHeaders(FDS_NONE), requestBody(chatBody('young'), true));
    clock.advance(20_000);
    expect(pending.sweep()).to.equal(1);
    expect(routing.inflight).to.equal(1);
    expect(routing.finished[0]!.outcome).to.deep.equal({ aborted: true });
    pending.stop();
    expect(routing.inflight).to.equal(0);
  });

  it('puts the decision summary into the metadata when the decision header is on (Envoy copies it)', () => {
    const { edge } = setup(true);
    const out = openScripted(edge).feed(requestHeaders(FDS_NONE), requestBody(chatBody('q'), true));
    const summary = ticketOf(out[0]!).decision;
    expect(summary).to.be.a('string');
    expect(parseDecisionSummary(summary!)?.ep).to.equal('10.0.0.1:8000');
    expect(parseDecisionSummary(summary!)).to.not.have.property('replica');
    const withReplica = ticketOf(
      openScripted(setup(true, 'router-b-42').edge).feed(requestHeaders(FDS_NONE), requestBody(chatBody('q'), true))[0]!,
    ).decision;
    expect(parseDecisionSummary(withReplica!)['replica']).to.equal('router-b-42');
  });
});
