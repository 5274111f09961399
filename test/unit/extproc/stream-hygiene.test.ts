/**
 * The edge's idle expiry, admission hand-off (held decisions, 429 with Retry-After, withdrawal
 * when the stream ends) and per-cause log rate limiting, driven message by message.
 */
import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { defaultConfig } from '../../../src/config/loader.js';
import { RouterError } from '../../../src/core/errors.js';
import type { AdmissionService, RouteTicket } from '../../../src/core/routing-service.js';
import type { RouteRequest } from '../../../src/core/types.js';
import { EdgeContext, type EdgeOptions } from '../../../src/extproc/edge-context.js';
import { parsePriority } from '../../../src/extproc/request-mapping.js';
import { extractPrompt } from '../../../src/request/extract-prompt.js';
import { createLogger } from '../../../src/logging/logger.js';
import { ManualClock } from '../../../src/util/clock.js';
import { FakeRoutingService } from '../../kit/fake-routing-service.js';
import { chatBody, headerValues, kindOf, requestBody, requestHeaders, responseHeaders } from '../../kit/ext-proc-messages.js';
import { openScripted } from '../../kit/scripted-stream.js';

const FDS = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'FULL_DUPLEX_STREAMED' } as const;

function edgeWith(over: Partial<EdgeOptions> = {}) {
  const routing = new FakeRoutingService();
  const clock = new ManualClock(1000);
  const lines: string[] = [];
  const edge = new EdgeContext({
    routing,
    extract: extractPrompt,
    requests: defaultConfig().requests,
    decisionHeader: false,
    clock,
    logger: createLogger({ level: 'info', write: (l) => lines.push(l) }),
    idle: { requestMs: 2000, responseMs: 10_000 },
    ...over,
  });
  return { routing, clock, lines, edge };
}

/** An admission service whose decisions the test releases by hand. */
class ManualAdmission implements AdmissionService {
  readonly held: { request: RouteRequest; signal: AbortSignal; resolve: (t: RouteTicket) => void; reject: (e: unknown) => void }[] = [];
  constructor(private readonly routing: FakeRoutingService) {}
  admit(request: RouteRequest, signal: AbortSignal): Promise<RouteTicket> {
    return new Promise((resolve, reject) => this.held.push({ request, signal, resolve, reject }));
  }
  release(i: number): void {
    const h = this.held[i]!;
    h.resolve(this.routing.route(h.request));
  }
}

const flush = () => new Promise((r) => setImmediate(r));

describe('extproc/stream-handler hygiene and admission', () => {
  it('expires abandoned streams after the idle timeout of their phase and releases their accounting', () => {
    const { edge, routing, clock } = edgeWith();
    // 100 routed and abandoned after the decision, 100 abandoned mid-upload.
    const routed = Array.from({ length: 100 }, () => {
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS }), requestBody(chatBody('abandoned'), true));
      return s;
    });
    const uploading = Array.from({ length: 100 }, () => {
      const s = openScripted(edge);
      s.feed(requestHeaders({ ...FDS }), requestBody('{"model":', false));
      return s;
    });
    expect(routing.inflight).to.equal(100);
    expect(edge.openStreams).to.equal(200);
    clock.advance(2001);
    expect(edge.sweepIdle()).to.equal(100); // request phase only
    expect(uploading.every((s) => s.stream.failed?.code === GrpcStatus.DEADLINE_EXCEEDED)).to.equal(true);
    expect(routing.inflight).to.equal(100);
    // A response that keeps talking stays; the silent ones go at the response timeout.
    clock.advance(5000);
    routed[0]!.feed(responseHeaders(200));
    clock.advance(5000);
    expect(edge.sweepIdle()).to.equal(99);
    expect(routing.inflight).to.equal(1);
    expect(routing.finished.every((f) => f.outcome.aborted)).to.equal(true);
    expect(edge.openStreams).to.equal(1);
    expect(edge.expiredStreams).to.equal(199);
  });

  it('sends the decision when a held request is admitted, and nothing (slot given back) when the stream ended first', async () => {
    const { edge, routing } = edgeWith();
    const admission = new ManualAdmission(routing);
    const e2 = new EdgeContext({ ...edge.options, admission, tenantHeader: 'X-Tenant', priorityHeader: 'x-priority' });
    const a = openScripted(e2);
    expect(
      a.feed(requestHeaders({ ...FDS, headers: { 'x-tenant': 'acme', 'x-priority': '7' } }), requestBody(chatBody('held'), true)),
    ).to.have.length(0);
    expect(a.handler.state).to.equal('admitting');
    expect(admission.held[0]!.request).to.include({ tenant: 'acme', priority: 7 });
    admission.release(0);
    await flush();
    expect(a.stream.written.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    expect(a.handler.state).to.equal('forwarded');

    const b = openScripted(e2);
    b.feed(requestHeaders({ ...FDS }), requestBody(chatBody('gone'), true));
    b.cancel();
    expect(admission.held[1]!.signal.aborted).to.equal(true);
    admission.release(1); // admitted anyway (race): the ticket is finished at once
    await flush();
    expect(b.stream.written).to.have.length(0);
    expect(routing.inflight).to.equal(1); // only a's
  });

  it('answers a refused request 429 with Retry-After in whole seconds', async () => {
    const { edge, routing } = edgeWith();
    const admission = new ManualAdmission(routing);
    const e2 = new EdgeContext({ ...edge.options, admission });
    const s = openScripted(e2);
    s.feed(requestHeaders({ ...FDS }), requestBody(chatBody('x'), true));
    admission.held[0]!.reject(new RouterError('OVERLOADED', 'saturated', { retryAfterMs: 1500 }));
    await flush();
    const ir = s.stream.written[0]!.immediate_response!;
    expect(ir.status!.code).to.equal('TooManyRequests');
    expect(headerValues({ headers: ir.headers!.set_headers.map((o) => o.header!) })['retry-after']).to.equal('2');
  });

  it('rate-limits log lines per cause: a flood of bad streams writes a few lines plus a count', () => {
    const { edge, lines } = edgeWith();
    for (let i = 0; i < 500; i++) {
      const s = openScripted(edge);
      s.feed(requestBody('x', true)); // body before headers: protocol violation
    }
    const s = openScripted(edge);
    s.feed(requestHeaders({ ...FDS, endOfStream: true })); // one different cause still logs
    const violations = lines.filter((l) => l.includes('protocol violation'));
    expect(violations).to.have.length(5);
    expect(lines.filter((l) => l.includes('request refused'))).to.have.length(1);
    edge.stop();
    const summary = lines.find((l) => l.includes('suppressed by the rate limit'));
    expect(summary, lines.slice(-2).join('')).to.contain('"stream:PROTOCOL":495');
  });

  it('reads priorities as clamped integers', () => {
    expect(parsePriority(undefined)).to.equal(undefined);
    expect(parsePriority(' 3 ')).to.equal(3);
    expect(parsePriority('-2')).to.equal(-2);
    expect(parsePriority('99999')).to.equal(1000);
    expect(parsePriority('high')).to.equal(0);
  });
});
