/**
 * Replication state without NATS: the wire codec (round trip, malformed input refused),
 * merging peers' load into the data layer's picture (sums, expiry, peer cap), the outbox
 * bound, and two prefix indexes kept in step through the plugin's seam by an in-process
 * bus (endpoints numbered differently on each side, no echo, departures not shared).
 * The real NATS/JetStream path is test/e2e/replication.test.ts.
 */
import { expect } from 'chai';
import { encode } from '@msgpack/msgpack';
import { createScheduler } from '../../../src/compose/create-scheduler.js';
import { defaultConfig } from '../../../src/config/default-config.js';
import { parseConfig } from '../../../src/config/parse-config.js';
import { isRouterError } from '../../../src/core/errors.js';
import { PrefixIndexReplicaPort, type IndexDelta } from '../../../src/plugins/multi/prefix-index-replica.js';
import type { BlockHashes } from '../../../src/prefix-cache/block-hasher.js';
import { PrefixIndex } from '../../../src/prefix-cache/prefix-index.js';
import { IndexOutbox } from '../../../src/replication/index-outbox.js';
import { PeerLoadTable } from '../../../src/replication/peer-load.js';
import {
  decodeIndexBatch,
  decodeLoadReport,
  encodeIndexBatch,
  encodeLoadReport,
  packChange,
  unpackKeys,
  WIRE_LIMITS,
} from '../../../src/replication/wire-codec.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { endpoint } from '../builders.js';

function keys(...pairs: [number, number][]): BlockHashes {
  return { count: pairs.length, lo: Int32Array.from(pairs.map((p) => p[0])), hi: Int32Array.from(pairs.map((p) => p[1])) };
}

const CHAIN = keys([1, -1], [2, 0x7fffffff], [-3, 3], [4, -0x80000000]);

describe('replication: wire codec', () => {
  it('round-trips a load report and an index batch (keys exactly, negative halves included)', () => {
    const report = {
      replicaId: 'r1',
      endpoints: [
        { endpointId: '10.0.0.1:8000', inflightRequests: 3, prefillingRequests: 1, inflightPromptTokens: 900, pendingTokens: 1234.5 },
      ],
    };
    expect(decodeLoadReport(encodeLoadReport(report))).to.deep.equal(report);
    const bytes = encodeIndexBatch('r1', 64, [
      packChange({ kind: 'insert', endpointId: 'e1', keys: CHAIN }),
      packChange({ kind: 'clear', endpointId: 'e2', keys: keys() }),
    ]);
    const b = decodeIndexBatch(bytes)!;
    expect(b.replicaId).to.equal('r1');
    expect(b.blockChars).to.equal(64);
    expect(b.changes.map((c) => [c.kind, c.endpointId, c.keys.count])).to.deep.equal([
      ['insert', 'e1', 4],
      ['clear', 'e2', 0],
    ]);
    expect([...b.changes[0]!.keys.lo]).to.deep.equal([...CHAIN.lo]);
    expect([...b.changes[0]!.keys.hi]).to.deep.equal([...CHAIN.hi]);
    expect(bytes.length).to.be.below(4 * 8 + 40); // 8 bytes a key plus a small frame
  });

  it('refuses malformed messages whole (never applied halfway)', () => {
    const bad: Uint8Array[] = [
      new Uint8Array(0),
      new Uint8Array([0xc1]),
      encode({ v: 2, r: 'r', e: [] }),
      encode({ v: 1, r: '', e: [] }),
      encode({ v: 1, r: 'r', e: [['e', -1, 0, 0, 0]] }),
      encode({ v: 1, r: 'r', e: [['e', 1.5, 0, 0, 0]] }),
      encode({ v: 1, r: 'r', e: 'x' }),
      encode([1, 2, 3]),
    ];
    for (const m of bad) expect(decodeLoadReport(m)).to.equal(undefined);
    const badBatches = [
      encode({ v: 1, r: 'r', b: 64, c: [[0, 'e', new Uint8Array(7)]] }),
      encode({ v: 1, r: 'r', b: 64, c: [[9, 'e', new Uint8Array(8)]] }),
      encode({ v: 1, r: 'r', b: 0, c: [] }),
      encode({
        v: 1,
        r: 'r',
        b: 64,
        c: [
          [0, 'e', new Uint8Array(8)],
          [0, 7, new Uint8Array(8)],
        ],
      }),
    ];
    for (const m of badBatches) expect(decodeIndexBatch(m)).to.equal(undefined);
    expect(unpackKeys(new Uint8Array(12))).to.equal(undefined);
  });
});

describe('replication: peer load merged into the load picture', () => {
  const e0 = endpoint(0);
  const share = (id: string, n: number) => ({
    endpointId: id,
    inflightRequests: n,
    prefillingRequests: n,
    inflightPromptTokens: 100 * n,
    pendingTokens: 10 * n,
  });

  it('adds fresh peers after refresh, and drops a silent peer after the timeout', () => {
    const t = new PeerLoadTable(1000);
    t.ingest({ replicaId: 'a', endpoints: [share(e0.id, 2)] }, 0);
    t.ingest({ replicaId: 'b', endpoints: [share(e0.id, 3)] }, 500);
    expect(t.peerLoad(e0.id), 'not counted before refresh').to.equal(undefined);
    t.refresh(600);
    expect(t.peerLoad(e0.id)).to.deep.equal({ inflight: 5, prefilling: 5, prompt: 500, pending: 50 });
    const snap = {
      inflightRequests: 1,
      inflightPromptTokens: 10,
      prefillingRequests: 0,
      pendingTokens: 7,
      waiting: undefined,
      running: undefined,
      kvUsage: undefined,
      metricsAgeMs: Infinity,
      healthy: true,
    };
    t.enrichInPlace(e0, snap);
    expect([snap.inflightRequests, snap.prefillingRequests, snap.inflightPromptTokens, snap.pendingTokens]).to.deep.equal([6, 5, 510, 57]);
    // a's newer report replaces its old one (a full picture, not an increment)
    t.ingest({ replicaId: 'a', endpoints: [] }, 700);
    expect(t.refresh(1400)).to.equal(0);
    expect(t.peerLoad(e0.id)?.inflight).to.equal(3);
    expect(t.refresh(1501)).to.equal(1); // b silent since 500
    expect(t.peerIds()).to.deep.equal(['a']);
    expect(t.peerLoad(e0.id)).to.equal(undefined);
  });

  it('tracks at most maxPeers peers', () => {
    const t = new PeerLoadTable(1000, 2);
    for (const id of ['a', 'b', 'c']) t.ingest({ replicaId: id, endpoints: [] }, 0);
    t.refresh(0);
    expect(t.peerIds()).to.deep.equal(['a', 'b']);
    expect(t.stats().reportsRefused).to.equal(1);
  });

  it('is applied after the token-load model, so peers add to pendingTokens instead of being overwritten', () => {
    const peers = new PeerLoadTable(1000);
    const s = createScheduler(defaultConfig({ strategy: 'cache-aware' }), {
      clock: new ManualClock(),
      rng: seededRng(1),
      fleetLoadSources: [peers],
    });
    const ep = s.registry.all()[0]!;
    peers.ingest({ replicaId: 'a', endpoints: [share(ep.id, 4)] }, 0);
    peers.refresh(0);
    expect(s.registry.loadSources().at(-1)).to.equal('replication-peer-load');
    const l = s.registry.loadOf(ep, 0);
    expect(l.inflightRequests).to.equal(4);
    expect(l.pendingTokens).to.equal(40);
  });
});

describe('replication: index outbox', () => {
  it('batches changes and, beyond its byte bound, drops the oldest batches (counted)', () => {
    const big = keys(...Array.from({ length: 512 }, (_, i): [number, number] => [i, i]));
    const box = new IndexOutbox('r', 64, 1, 64 * 1024);
    for (let i = 0; i < 40; i++) box.add({ kind: 'insert', endpointId: 'e', keys: big });
    const s = box.stats();
    expect(s.changes).to.equal(40);
    expect(s.queuedBytes).to.be.at.most(64 * 1024);
    expect(s.droppedChanges).to.equal(40 - s.queuedBatches);
    expect(s.droppedChanges).to.be.greaterThan(0);
    const first = box.peek()!;
    expect(decodeIndexBatch(first.bytes)!.changes).to.have.length(1);
    box.shift();
    expect(box.stats().queuedBatches).to.equal(s.queuedBatches - 1);
    box.shift(true); // refused by the server for good: counted as dropped
    expect(box.stats().droppedChanges).to.equal(s.droppedChanges + 1);
  });

  it('seals a batch at 256 KiB whatever the outbox bound, so a batch stays under NATS max_payload', () => {
    const big = keys(...Array.from({ length: 1024 }, (_, i): [number, number] => [i, -i]));
    const box = new IndexOutbox('r', 64, 10_000, 1024 * 1024 * 1024);
    for (let i = 0; i < 100; i++) box.add({ kind: 'insert', endpointId: 'e', keys: big });
    const first = box.peek()!;
    expect(first.changes).to.be.within(2, 40);
    expect(first.bytes.length).to.be.below(WIRE_LIMITS.maxMessageBytes);
    expect(decodeIndexBatch(first.bytes)!.changes).to.have.length(first.changes);
  });
});

describe('replication: two prefix indexes kept in step through the plugin seam', () => {
  // A numbers the engines x, y; B numbers them y, x (discovery order differs).
  const x = endpoint(0, { id: '10.0.0.1:8000' });
  const y = endpoint(1, { id: '10.0.0.2:8000' });
  const yOnB = { ...y, index: 0 };
  const xOnB = { ...x, index: 1 };

  function pair() {
    const ia = new PrefixIndex({ endpoints: 2, capacityBlocks: 100 });
    const ib = new PrefixIndex({ endpoints: 2, capacityBlocks: 100 });
    const pa = new PrefixIndexReplicaPort(ia, 64, [x, y]);
    const pb = new PrefixIndexReplicaPort(ib, 64, [yOnB, xOnB]);
    const fromA: IndexDelta[] = [];
    const fromB: IndexDelta[] = [];
    // the bus: what one side observes is encoded, decoded and applied on the other
    const relay = (to: PrefixIndexReplicaPort, log: IndexDelta[]) => (d: IndexDelta) => {
      log.push(d);
      for (const c of decodeIndexBatch(encodeIndexBatch('peer', 64, [packChange(d)]))!.changes) to.apply(c);
    };
    pa.observe(relay(pb, fromA));
    pb.observe(relay(pa, fromB));
    return { ia, ib, pa, pb, fromA, fromB };
  }

  it('an insert on A is held by the same engine on B, and applying it is not echoed back', () => {
    const { ia, ib, fromA, fromB } = pair();
    ia.insert(x.index, CHAIN);
    expect([...ib.match(CHAIN)]).to.deep.equal([0, 4]); // y, x on B
    expect(fromA).to.have.length(1);
    expect(fromB).to.have.length(0);
  });

  it('removals and endpoint clears travel too; the digests agree', () => {
    const { ia, ib, pa, pb } = pair();
    ia.insert(y.index, CHAIN);
    ia.insert(x.index, CHAIN);
    ia.removeBlocks(y.index, 2, CHAIN);
    expect([...ib.match(CHAIN)]).to.deep.equal([2, 4]);
    expect(pa.digest()).to.deep.equal(pb.digest());
    ib.evictEndpoint(xOnB.index);
    expect([...ia.match(CHAIN)]).to.deep.equal([0, 2]);
    expect(pa.digest()).to.deep.equal(pb.digest());
    expect(pa.keysOf(y.id)!.count).to.equal(2);
  });

  it('a change for an engine the other side does not have is refused, not misapplied', () => {
    const { pb, ib } = pair();
    expect(pb.apply({ kind: 'insert', endpointId: '10.9.9.9:1', keys: CHAIN })).to.equal(false);
    expect(ib.stats().entries).to.equal(0);
  });

  it('bookkeeping of one side (unobserved: an engine leaving its registry) is not shared', () => {
    const { ia, ib, pa } = pair();
    ia.insert(x.index, CHAIN);
    pa.unobserved(() => ia.evictEndpoint(x.index));
    expect(ia.size(x.index)).to.equal(0);
    expect(ib.size(xOnB.index)).to.equal(4);
  });
});

describe('replication: config section', () => {
  it('is off by default with documented defaults', () => {
    const c = defaultConfig();
    expect(c.replication.enabled).to.equal(false);
    expect(c.replication.servers).to.deep.equal(['nats://127.0.0.1:4222']);
    expect(c.replication.index.stream).to.equal('CACHEROUTE_INDEX');
  });

  it('rejects a peer timeout shorter than two intervals and a non-NATS URL, naming the field', () => {
    const bad = (replication: unknown, field: string) => {
      try {
        parseConfig({ apiVersion: 'cacheroute/v1', endpoints: ['127.0.0.1:8000'], replication });
        expect.fail('accepted');
      } catch (err) {
        expect(isRouterError(err), String(err)).to.equal(true);
        expect(String(err)).to.include(field);
      }
    };
    bad({ load: { intervalMs: 500, peerTimeoutMs: 600 } }, 'replication.load.peerTimeoutMs');
    bad({ servers: ['http://127.0.0.1:4222'] }, 'replication.servers[0]');
  });
});
