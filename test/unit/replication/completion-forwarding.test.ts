import { expect } from 'chai';
import { decode, encode } from '@msgpack/msgpack';
import type { NatsConnection } from 'nats';
import { PendingResponses, ticketOwner } from '../../../src/extproc/pending-responses.js';
import { AccessLogReceiver } from '../../../src/extproc/access-log-receiver.js';
import type { HTTPAccessLogEntry__Output, StreamAccessLogsMessage__Output } from '../../../src/extproc/access-log-proto.js';
import { CompletionForwarding, ownerTagOf } from '../../../src/replication/completion-forwarding.js';
import { decodeCompletions, encodeCompletions } from '../../../src/replication/wire-codec.js';
import { CACHEROUTE_FIRST_BODY_TAG } from '../../../src/extproc/response-builders.js';
import { ManualClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { FakeRoutingService } from '../../kit/fake-routing-service.js';

/** An in-process stand-in for core NATS subjects (unit tests only): publish delivers synchronously. */
class FakeBus {
  private readonly subs = new Map<string, ((data: Uint8Array) => void)[]>();
  published: { subject: string; bytes: number }[] = [];
  connection(): NatsConnection {
    let closed = false;
    const nc = {
      isClosed: () => closed,
      close: async () => {
        closed = true;
      },
      publish: (subject: string, data: Uint8Array) => {
        this.published.push({ subject, bytes: data.length });
        for (const cb of this.subs.get(subject) ?? []) cb(data);
      },
      subscribe: (subject: string, opts: { callback: (err: Error | null, msg: { data: Uint8Array }) => void }) => {
        const cb = (data: Uint8Array): void => opts.callback(null, { data });
        const list = this.subs.get(subject) ?? [];
        list.push(cb);
        this.subs.set(subject, list);
        return { unsubscribe: () => list.splice(list.indexOf(cb), 1) };
      },
    };
    return nc as unknown as NatsConnection;
  }
}

interface Replica {
  readonly id: string;
  readonly routing: FakeRoutingService;
  readonly pending: PendingResponses;
  readonly forwarding: CompletionForwarding;
  readonly receiver: AccessLogReceiver;
  readonly peers: string[];
}

function replica(
  id: string,
  clock: ManualClock,
  opts: { orphanAgeMs?: number; maxOutboxEntries?: number; lossyGraceMs?: number } = {},
): Replica {
  const routing = new FakeRoutingService();
  let n = 0;
  const pending = new PendingResponses({
    clock,
    maxAgeMs: 600_000,
    orphanAgeMs: opts.orphanAgeMs ?? 5_000,
    owner: ownerTagOf(id),
    nonce: () => `n${n++}`,
  });
  const peers: string[] = [];
  const forwarding = new CompletionForwarding({
    replicaId: id,
    subjectPrefix: 'cr',
    tickets: pending,
    peers: { peerIds: () => peers },
    maxOutboxEntries: opts.maxOutboxEntries ?? 100,
    checkIntervalMs: 1_000_000,
    lossyGraceMs: opts.lossyGraceMs ?? 0,
    logger: silentLogger,
  });
  const receiver = new AccessLogReceiver(pending, silentLogger, forwarding);
  return { id, routing, pending, forwarding, receiver, peers };
}

/** Routes one request on `r` and hands its ticket over (what the stream handler does). */
function hold(r: Replica): string {
  const ticket = r.routing.route({
    requestId: `q${r.routing.requests.length}`,
    prompt: { text: 'x' },
    model: 'm',
    headers: new Map(),
  } as never);
  return r.pending.hold(ticket);
}

function entry(key: string, code = 200, firstBodyUs?: string): HTTPAccessLogEntry__Output {
  return {
    common_properties: {
      upstream_remote_address: { socket_address: { address: '10.0.0.2', port_value: 8000 } },
      metadata: { filter_metadata: { cacheroute: { fields: { ticket: { stringValue: key } } } } },
      access_log_type: 'DownstreamEnd',
      ...(firstBodyUs !== undefined ? { custom_tags: { [CACHEROUTE_FIRST_BODY_TAG]: firstBodyUs } } : {}),
    },
    response: { response_code: { value: code } },
  } as unknown as HTTPAccessLogEntry__Output;
}

function batch(...keys: string[]): StreamAccessLogsMessage__Output {
  return {
    identifier: null,
    log_entries: 'http_logs',
    http_logs: { log_entry: keys.map((k) => entry(k)) },
  } as StreamAccessLogsMessage__Output;
}

describe('replication: completions forwarded to the ticket owner', () => {
  it('keys name their owner, carry a nonce and parse back', () => {
    const clock = new ManualClock();
    const a = replica('router-a', clock);
    const k1 = hold(a);
    const k2 = hold(a);
    expect(k1).to.equal(`${ownerTagOf('router-a')}.0.n0`);
    expect(ticketOwner(k1)).to.equal(a.pending.owner);
    expect(k2).to.not.equal(k1);
    expect(ticketOwner('no-owner-here')).to.equal(undefined);
    expect(ticketOwner('bad owner.1.x')).to.equal(undefined);
    expect(ownerTagOf('router-a'))
      .to.match(/^[0-9a-f]{10}$/)
      .and.not.equal(ownerTagOf('router-b'));
    // The default nonce is random: two processes' keys with the same owner and seq differ.
    const p1 = new PendingResponses({ clock, maxAgeMs: 1000, owner: 'o' });
    const p2 = new PendingResponses({ clock, maxAgeMs: 1000, owner: 'o' });
    const t = new FakeRoutingService();
    const req = { requestId: 'r', prompt: { text: 'x' }, model: 'm', headers: new Map() } as never;
    expect(p1.hold(t.route(req)))
      .to.match(/^o\.0\.[0-9a-f]{12}$/)
      .and.not.equal(p2.hold(t.route(req)));
  });

  it("a replica reading another owner's entries forwards them; the owner finishes them exactly once", () => {
    const clock = new ManualClock();
    const bus = new FakeBus();
    const a = replica('router-a', clock);
    const b = replica('router-b', clock);
    const c = replica('router-c', clock);
    for (const r of [a, b, c]) r.forwarding.up(bus.connection(), true);
    const ka = [hold(a), hold(a), hold(a)];
    const kc = hold(c);
    const kb = hold(b);
    // B's access log stream carries everyone's entries (a load-balanced log stream).
    b.receiver.onMessage(batch(ka[0]!, ka[1]!, kc, kb));
    expect(a.routing.inflight).to.equal(1);
    expect(c.routing.inflight).to.equal(0);
    expect(b.routing.inflight).to.equal(0);
    expect(a.routing.finished.map((f) => f.outcome)).to.deep.equal([
      { aborted: false, status: 200, servedBy: '10.0.0.2:8000' },
      { aborted: false, status: 200, servedBy: '10.0.0.2:8000' },
    ]);
    // One message per owner per batch.
    expect(bus.published.map((p) => p.subject)).to.deep.equal([`cr.completions.${a.pending.owner}`, `cr.completions.${c.pending.owner}`]);
    expect(b.forwarding.stats()).to.deep.include({ forwardedOut: 3 });
    expect(a.forwarding.stats()).to.deep.include({ forwardedIn: 2 });
    expect(b.receiver.snapshot()).to.deep.include({ forwarded: 3, foreign: 0 });
    // Duplicates: the same entry reaching C as well (and A itself) finishes nothing twice.
    c.receiver.onMessage(batch(ka[0]!, ka[2]!));
    a.receiver.onMessage(batch(ka[2]!));
    expect(a.routing.inflight).to.equal(0);
    expect(a.routing.finishCalls).to.equal(3);
    expect(a.forwarding.stats().dropped['unknown-ticket']).to.equal(1);
    // Both late copies (C's forwarded one and A's own) name a finished ticket.
    expect(a.pending.snapshot()).to.deep.include({ pending: 0, completed: 3, unknown: 2 });
  });

  it("forwards the first-body time, so the owner's TTFT model learns from completions another replica logged", () => {
    const clock = new ManualClock();
    const bus = new FakeBus();
    const a = replica('router-a', clock);
    const b = replica('router-b', clock);
    for (const r of [a, b]) r.forwarding.up(bus.connection(), true);
    const [k1, k2] = [hold(a), hold(a)];
    b.receiver.onMessage({
      identifier: null,
      log_entries: 'http_logs',
      http_logs: { log_entry: [entry(k1, 200, '183250'), entry(k2)] },
    } as StreamAccessLogsMessage__Output);
    expect(a.routing.finished.map((f) => f.outcome.firstBodyMs)).to.deep.equal([183.25, undefined]);
  });

  it('keeps completions in a bounded outbox while NATS is away and sends them when it is back', () => {
    const clock = new ManualClock();
    const bus = new FakeBus();
    const a = replica('router-a', clock);
    const b = replica('router-b', clock, { maxOutboxEntries: 2 });
    a.forwarding.up(bus.connection(), true);
    const keys = [hold(a), hold(a), hold(a)];
    b.forwarding.down();
    b.receiver.onMessage(batch(keys[0]!));
    b.receiver.onMessage(batch(keys[1]!));
    b.receiver.onMessage(batch(keys[2]!));
    expect(a.routing.inflight).to.equal(3);
    expect(b.forwarding.stats()).to.deep.include({ outboxEntries: 2, forwardedOut: 0 });
    expect(b.forwarding.stats().dropped['outbox-full']).to.equal(1);
    b.forwarding.up(bus.connection(), true);
    expect(a.routing.inflight, 'the oldest was dropped').to.equal(1);
    expect(b.forwarding.stats()).to.deep.include({ outboxEntries: 0, forwardedOut: 2 });
  });

  it('marks tickets alive during a NATS outage at risk; they expire after the orphan age, others after the route timeout', () => {
    const clock = new ManualClock(1000);
    const bus = new FakeBus();
    const a = replica('router-a', clock, { orphanAgeMs: 5_000 });
    a.forwarding.up(bus.connection(), true);
    const before = hold(a);
    clock.advance(1000);
    a.forwarding.down(); // NATS gone: entries forwarded to A are lost from now on
    expect(a.pending.lossy).to.equal(true);
    clock.advance(1000);
    const during = hold(a);
    a.forwarding.up(bus.connection(), true);
    expect(a.pending.lossy).to.equal(false);
    const after = hold(a);
    expect(a.pending.snapshot()).to.deep.include({ pending: 3, atRisk: 2 });
    clock.advance(4_000); // 5 s after the outage began, 4 s after `during` was held
    expect(a.pending.sweep()).to.equal(0);
    clock.advance(1); // the outage began 5.001 s ago
    expect(a.pending.sweep()).to.equal(1);
    expect(a.routing.finished.map((f) => f.outcome)).to.deep.equal([{ aborted: true }]);
    clock.advance(1_000); // `during` became at risk when held: 5.001 s ago
    expect(a.pending.sweep()).to.equal(1);
    expect(a.pending.snapshot()).to.deep.include({ pending: 1, atRisk: 0, orphaned: 2, expired: 0 });
    // The ticket held after the outage waits for its entry as long as the route allows.
    a.receiver.onMessage(batch(after));
    expect(a.routing.inflight).to.equal(0);
    expect(before).to.not.equal(during);
  });

  it('a vanished peer makes the path lossy and its tickets are no longer forwarded (owner-gone)', () => {
    const clock = new ManualClock(1000);
    const bus = new FakeBus();
    const a = replica('router-a', clock, { lossyGraceMs: 3_000 });
    const b = replica('router-b', clock, { orphanAgeMs: 2_000 });
    for (const r of [a, b]) r.forwarding.up(bus.connection(), true);
    a.peers.push('router-b');
    b.peers.push('router-a');
    a.forwarding.checkPeers();
    b.forwarding.checkPeers();
    const kb = hold(b);
    const ka = hold(a);
    // B goes silent (SIGKILLed): A notices at its next check.
    b.forwarding.stop();
    a.peers.length = 0;
    a.forwarding.checkPeers();
    expect(a.pending.snapshot().atRisk, "A's tickets alive now may have lost entries B was receiving").to.equal(1);
    // Envoy may still be sending entries to the dead replica for a while: tickets held within
    // the grace are at risk too, later ones are not.
    clock.advance(2_000);
    hold(a);
    expect(a.pending.lossy).to.equal(true);
    clock.advance(1_001);
    hold(a);
    expect(a.pending.lossy).to.equal(false);
    expect(a.pending.snapshot()).to.deep.include({ pending: 3, atRisk: 2 });
    a.receiver.onMessage(batch(kb));
    expect(a.forwarding.stats()).to.deep.include({ forwardedOut: 0 });
    expect(a.forwarding.stats().dropped['owner-gone']).to.equal(1);
    expect(bus.published).to.deep.equal([]);
    // A replica that comes back under the same id is sent to again.
    a.peers.push('router-b');
    a.forwarding.checkPeers();
    b.forwarding.up(bus.connection(), true);
    a.receiver.onMessage(batch(kb));
    expect(b.routing.inflight).to.equal(0);
    expect(ka).to.be.a('string');
  });

  it('drops malformed messages and keys of another owner', () => {
    const clock = new ManualClock();
    const a = replica('router-a', clock);
    const k = hold(a);
    a.forwarding.receive(new Uint8Array([1, 2, 3]));
    a.forwarding.receive(encode({ v: 1, r: 'x', c: [[k, 2, null, null, null, null, null]] }));
    a.forwarding.receive(encode({ v: 1, r: 'x', c: [[k, 0, 99, null, null, null, null]] }));
    a.forwarding.receive(encodeCompletions('x', [{ key: `zz.${k}`, outcome: { aborted: false } }]));
    expect(a.forwarding.stats().dropped).to.deep.include({ malformed: 3, 'not-owner': 1 });
    expect(a.routing.inflight).to.equal(1);
  });

  it('round-trips outcomes on the wire; the message carries no prompt text', () => {
    const out = { aborted: false, status: 200, servedBy: '10.0.0.2:8000', promptTokens: 12, cachedTokens: 8, completionTokens: 3 };
    const bytes = encodeCompletions('router-b', [
      { key: 'abc.1.ff', outcome: out },
      { key: 'abc.2.ee', outcome: { aborted: true } },
    ]);
    expect(decodeCompletions(bytes)).to.deep.equal({
      replicaId: 'router-b',
      completions: [
        { key: 'abc.1.ff', outcome: out },
        { key: 'abc.2.ee', outcome: { aborted: true } },
      ],
    });
    expect(bytes.length).to.be.below(80);
    // No first-body time on any row: the message is exactly the older shape (no `t`).
    expect(Object.keys(decode(bytes) as object)).to.deep.equal(['v', 'r', 'c']);
  });

  it('first-body times ride beside the rows, so older and newer replicas read each other', () => {
    const timed = { aborted: false, status: 200, firstBodyMs: 412.5 };
    const bytes = encodeCompletions('router-b', [
      { key: 'abc.1.ff', outcome: timed },
      { key: 'abc.2.ee', outcome: { aborted: true } },
    ]);
    expect(decodeCompletions(bytes)?.completions).to.deep.equal([
      { key: 'abc.1.ff', outcome: timed },
      { key: 'abc.2.ee', outcome: { aborted: true } },
    ]);
    // An older decoder checks the rows only: they keep their seven columns.
    const raw = decode(bytes) as { c: unknown[][]; t: unknown[] };
    expect(raw.c.map((row) => row.length)).to.deep.equal([7, 7]);
    expect(raw.t).to.deep.equal([412.5, null]);
    // An older sender's message (no `t`) decodes with no first-body times.
    const old = decodeCompletions(encode({ v: 1, r: 'x', c: [['abc.3.dd', 0, 200, null, null, null, null]] }));
    expect(old?.completions).to.deep.equal([{ key: 'abc.3.dd', outcome: { aborted: false, status: 200 } }]);
    // A malformed `t` drops the whole message.
    const row = ['abc.3.dd', 0, 200, null, null, null, null];
    for (const t of [[], [1, 2], ['5'], [-1], [Number.NaN], [3_600_000], 'x']) {
      expect(decodeCompletions(encode({ v: 1, r: 'x', c: [row], t })), JSON.stringify(t)).to.equal(undefined);
    }
  });
});
