import { expect } from 'chai';
import type { ReplicaSet } from '../../../../bench/contenders/types.js';
import type { RequestRecord } from '../../../../bench/harness/driver.js';
import { buildEnvoyConfig } from '../../../kit/envoy-config.js';
import { runFaultScript } from '../../../../bench/harness/fault-script.js';
import type { ReplicaFacts } from '../../../../bench/harness/replica-run.js';
import { expandPreset } from '../../../../bench/presets/expand.js';
import { REPLICAS, REPLICAS_SMOKE } from '../../../../bench/presets/replicas.js';
import type { FaultStep, PresetSpec } from '../../../../bench/presets/types.js';
import { accuracyRecoveryS, CONNECTED_SERIES, indexReconvergence, settledMs, windowHit } from '../../../../bench/report/replica-bars.js';
import { jaccard, minPairJaccard } from '../../../../bench/harness/replica-sampler.js';
import { isCut, judgePrediction, streamingAt, windowTokenHit } from '../../../../bench/stats/replica-facts.js';
import { requestRecord } from '../request-record.js';

const rec = (over: Partial<RequestRecord>): RequestRecord => requestRecord({ engine: '127.0.0.1:1', reusableTokens: 0, ...over });

const header = (matched: number, total: number, replica?: string): string =>
  `ep=127.0.0.1:1;reason=affinity;match=${matched}/${total};strategy=cache-aware${replica ? `;replica=${replica}` : ''}`;

describe('bench/presets/replicas', () => {
  const runs = expandPreset(REPLICAS);
  const byId = new Map(runs.map((r) => [r.id, r] as const));

  it('expands into the issue’s scenarios, in order', () => {
    expect(runs.map((r) => r.id)).to.deep.equal([
      'scale/agentic-8rps/replicas-1',
      'scale/agentic-8rps/replicas-3',
      'kill/agentic-8rps/replicas-3-kill-r1',
      'fail-open/agentic-long-answers/replicas-1-fail-open-kill',
      'nats/agentic-8rps/replicas-3-nats-down',
      'cpu/agentic-8rps/main-a',
      'cpu/agentic-8rps/this-a',
      'cpu/agentic-8rps/main-b',
      'cpu/agentic-8rps/this-b',
      'low-load/agentic-2rps/this-build',
      'low-load/agentic-2rps/sglang-cache_aware',
      'low-load/agentic-2rps/vllm-cache_aware',
      'low-load/agentic-2rps/main-build',
    ]);
    // One engine setup for every run, so the engines start once and every block compares alike.
    expect(new Set(runs.map((r) => r.engines.label)).size).to.equal(1);
  });

  it('runs 1 vs 3 replicas on the same scenario, the 3 sharing state over NATS', () => {
    const a = byId.get('scale/agentic-8rps/replicas-1');
    const b = byId.get('scale/agentic-8rps/replicas-3');
    expect(a?.scenario).to.deep.equal(b?.scenario);
    expect(a?.contender).to.include({ kind: 'cacheroute', strategy: 'cache-aware' });
    expect(a?.contender.kind === 'cacheroute' ? (a.contender.replicas ?? 1) : 0).to.equal(1);
    expect(b?.contender).to.include({ replicas: 3, replication: 'nats' });
    expect(a?.faults).to.equal(undefined);
  });

  it('kills replica 1 of 3 at 10 s and restarts it 10 s later', () => {
    const k = byId.get('kill/agentic-8rps/replicas-3-kill-r1');
    expect(k?.contender).to.include({ replicas: 3, replication: 'nats' });
    expect(k?.faults).to.deep.equal([
      { atMs: 10_000, action: 'kill-replica', replica: 1 },
      { atMs: 20_000, action: 'restart-replica', replica: 1 },
    ]);
  });

  it('kills the single fail-open replica mid-run, with answers long enough to be mid-stream', () => {
    const f = byId.get('fail-open/agentic-long-answers/replicas-1-fail-open-kill');
    expect(f?.contender).to.include({ failOpen: true });
    expect(f?.contender.kind === 'cacheroute' ? (f.contender.replicas ?? 1) : 0).to.equal(1);
    expect(f?.faults?.[0]).to.deep.equal({ atMs: 10_000, action: 'kill-replica', replica: 0 });
    const s = f?.scenario;
    expect(s?.kind === 'agentic' ? s.outputTokens : 0).to.equal(96);
  });

  it('stops NATS at 10 s for 20 s', () => {
    const n = byId.get('nats/agentic-8rps/replicas-3-nats-down');
    expect(n?.faults).to.deep.equal([
      { atMs: 10_000, action: 'stop-nats' },
      { atMs: 30_000, action: 'start-nats' },
    ]);
    // The load outlasts the outage by 15 s, for the reconvergence window.
    const s = n?.scenario;
    expect(s?.kind === 'agentic' ? s.durationS : 0).to.equal(45);
  });

  it('compares CPU against a built checkout of main (ABAB, idle CPU measured) and TTFT against both peer routers', () => {
    const cpu = runs.filter((r) => r.block === 'cpu');
    expect(cpu.map((r) => (r.contender.kind === 'cacheroute' && r.contender.checkout !== undefined ? 'main' : 'this'))).to.deep.equal([
      'main',
      'this',
      'main',
      'this',
    ]);
    expect(cpu.every((r) => r.idleCpuMs === 10_000)).to.equal(true);
    // Neither side carries the decision header: both measured as deployed.
    expect(cpu.every((r) => r.contender.kind === 'cacheroute' && r.contender.routerOverrides === undefined)).to.equal(true);
    expect(runs.filter((r) => r.block === 'low-load').map((r) => r.contender.kind)).to.deep.equal([
      'cacheroute',
      'sglang-router',
      'vllm-router',
      'cacheroute',
    ]);
  });

  it('the smoke preset is the same matrix at 0.4× the times', () => {
    const smoke = expandPreset(REPLICAS_SMOKE);
    expect(smoke.map((r) => r.id)).to.deep.equal(runs.map((r) => r.id));
    expect(smoke.find((r) => r.block === 'kill')?.faults?.map((f) => f.atMs)).to.deep.equal([4000, 8000]);
    const s = smoke[0]?.scenario;
    expect(s?.kind === 'agentic' ? s.durationS : 0).to.equal(16);
  });

  it('refuses fault scripts that name a missing replica, NATS without replication, or go back in time', () => {
    const base = REPLICAS.blocks[0]!;
    const withFaults = (faults: FaultStep[], replicas = 3, replication: 'nats' | null = 'nats'): PresetSpec => ({
      ...REPLICAS,
      blocks: [
        {
          ...base,
          contenders: [{ kind: 'cacheroute', label: 'x', strategy: 'cache-aware', replicas, ...(replication ? { replication } : {}) }],
          faults,
        },
      ],
    });
    expect(() => expandPreset(withFaults([{ atMs: 1, action: 'kill-replica', replica: 3 }]))).to.throw(/replica 3 of 3/);
    expect(() => expandPreset(withFaults([{ atMs: 1, action: 'stop-nats' }], 1, null))).to.throw(/without replication/);
    expect(() =>
      expandPreset(
        withFaults([
          { atMs: 5, action: 'stop-nats' },
          { atMs: 1, action: 'start-nats' },
        ]),
      ),
    ).to.throw(/out of time order/);
  });
});

describe('bench/harness/fault-script', () => {
  it('runs the steps in order at their offsets against the replica set and records start and done times', async () => {
    const calls: string[] = [];
    const set: ReplicaSet = {
      names: ['a', 'b'],
      adminUrl: () => 'http://127.0.0.1:1',
      isRunning: () => true,
      kill: async (i) => void calls.push(`kill ${i}`),
      restart: async (i) => {
        await new Promise((r) => setTimeout(r, 20));
        calls.push(`restart ${i}`);
      },
      hasNats: true,
      stopNats: async () => void calls.push('stop-nats'),
      startNats: async () => {
        throw new Error('nats would not start');
      },
    };
    const t0 = performance.now();
    const script = runFaultScript(
      [
        { atMs: 30, action: 'kill-replica', replica: 1 },
        { atMs: 60, action: 'restart-replica', replica: 1 },
        { atMs: 60, action: 'stop-nats' },
        { atMs: 90, action: 'start-nats' },
      ],
      set,
      t0,
      () => undefined,
    );
    const events = await script.done;
    expect(calls).to.deep.equal(['kill 1', 'restart 1', 'stop-nats']);
    expect(events.map((e) => [e.action, e.target])).to.deep.equal([
      ['kill-replica', 'b'],
      ['restart-replica', 'b'],
      ['stop-nats', null],
      ['start-nats', null],
    ]);
    expect(events[0]!.startedMs).to.be.at.least(29);
    // The restart takes 20 ms: done after it started; the NATS stop waits for it.
    expect(events[1]!.doneMs! - events[1]!.startedMs).to.be.at.least(19);
    expect(events[2]!.startedMs).to.be.at.least(events[1]!.doneMs!);
    expect(events[3]).to.include({ doneMs: null, error: 'nats would not start' });
  });

  it('stops at cancel: steps not yet due never run', async () => {
    const calls: string[] = [];
    const set = {
      names: ['a'],
      adminUrl: () => '',
      isRunning: () => true,
      kill: async () => void calls.push('kill'),
      restart: async () => void calls.push('restart'),
      hasNats: false,
      stopNats: async () => undefined,
      startNats: async () => undefined,
    } satisfies ReplicaSet;
    const script = runFaultScript(
      [
        { atMs: 0, action: 'kill-replica', replica: 0 },
        { atMs: 10_000, action: 'restart-replica', replica: 0 },
      ],
      set,
      performance.now(),
      () => undefined,
    );
    await new Promise((r) => setTimeout(r, 30));
    script.cancel();
    const events = await script.done;
    expect(calls).to.deep.equal(['kill']);
    expect(events).to.have.length(1);
  });
});

describe('bench/stats/replica-facts', () => {
  it('a cut response started (2xx) and did not finish; a refused one is failed, not cut', () => {
    expect(isCut(rec({ outcome: 'incomplete', ttftMs: 50 }))).to.equal(true);
    // Headers came (200), the stream broke before the first token: cut too.
    expect(isCut(rec({ outcome: 'incomplete', ttftMs: null }))).to.equal(true);
    expect(isCut(rec({ outcome: 'http-error', status: 500, ttftMs: null }))).to.equal(false);
    expect(isCut(rec({ outcome: 'ok' }))).to.equal(false);
  });

  it('judges a predicted hit against the engine’s cached tokens, with one block of tolerance each', () => {
    // 60/100 router blocks predicted, the engine cached 590 of 1000 tokens: within tolerance.
    expect(judgePrediction(rec({ decision: header(60, 100, 'r0'), cachedTokens: 590 }))).to.include({ correct: true, replica: 'r0' });
    // Predicted 60% but the engine had evicted it (0 cached): wrong.
    expect(judgePrediction(rec({ decision: header(60, 100), cachedTokens: 0 }))?.correct).to.equal(false);
    // Predicted a miss, the engine hit 50%: wrong (the replica did not know).
    expect(judgePrediction(rec({ decision: header(0, 100), cachedTokens: 500 }))?.correct).to.equal(false);
    // Predicted a miss, the engine matched less than one block: right.
    expect(judgePrediction(rec({ decision: header(0, 100), cachedTokens: 16 }))?.correct).to.equal(true);
    // Served by another engine than decided (Envoy fallback), failed, or no header: not judged.
    expect(judgePrediction(rec({ decision: header(60, 100), engine: '127.0.0.1:2' }))).to.equal(null);
    expect(judgePrediction(rec({ decision: header(60, 100), outcome: 'timeout' }))).to.equal(null);
    expect(judgePrediction(rec({}))).to.equal(null);
  });

  it('counts responses streaming at a kill and how many completed', () => {
    const records = [
      rec({ id: 'a', scheduledMs: 0, ttftMs: 100, endMs: 900 }),
      rec({ id: 'b', scheduledMs: 200, ttftMs: 100, endMs: 700, outcome: 'incomplete' }),
      rec({ id: 'c', scheduledMs: 450, ttftMs: 100, endMs: 900 }), // first text after the kill
      rec({ id: 'd', scheduledMs: 0, ttftMs: 50, endMs: 300 }), // done before the kill
    ];
    expect(streamingAt(records, 500, 'r0')).to.deep.equal({ target: 'r0', atMs: 500, streaming: 2, completed: 1 });
  });

  it('windowed token hit uses successful requests sent in the window', () => {
    const records = [
      rec({ scheduledMs: 100, cachedTokens: 500 }),
      rec({ scheduledMs: 1500, cachedTokens: 1000 }),
      rec({ scheduledMs: 200, outcome: 'timeout', cachedTokens: null }),
    ];
    expect(windowTokenHit(records, 0, 1000)).to.deep.equal({ requests: 1, rate: 0.5 });
    expect(windowTokenHit(records, 0, 2000)).to.deep.equal({ requests: 2, rate: 0.75 });
  });
});

describe('bench/report/replica-bars', () => {
  const facts = (over: Partial<ReplicaFacts>): ReplicaFacts => ({
    replicas: ['r0', 'r1'],
    faults: [],
    failed: 0,
    cut: 0,
    cpuMsPerRequest: null,
    cpuMsPerRequestByReplica: [],
    cpuWindowS: 0,
    streamingAtKills: [],
    accuracy: { all: { n: 0, correct: 0, rate: null }, byReplica: {}, unjudged: 0 },
    perSecond: [],
    accuracyPerSecond: {},
    replicationSeries: [],
    indexAgreement: [],
    inflightAtEnd: [],
    inflightExact: true,
    samples: 0,
    ...over,
  });

  it('a gauge settles when the last replica reads 1 for good after NATS returns', () => {
    const f = facts({
      replicationSeries: [
        {
          replica: 'r0',
          series: CONNECTED_SERIES,
          points: [
            [0, 1],
            [10_500, 0],
            [30_800, 1],
          ],
        },
        {
          replica: 'r1',
          series: CONNECTED_SERIES,
          points: [
            [0, 1],
            [10_300, 0],
            [31_900, 1],
          ],
        },
      ],
    });
    expect(settledMs(f, CONNECTED_SERIES, 30_000)).to.equal(1900);
    const never = facts({
      replicationSeries: [
        {
          replica: 'r0',
          series: CONNECTED_SERIES,
          points: [
            [0, 1],
            [10_500, 0],
          ],
        },
      ],
    });
    expect(settledMs(never, CONNECTED_SERIES, 30_000)).to.equal(null);
    expect(settledMs(facts({}), CONNECTED_SERIES, 30_000)).to.equal(null);
  });

  it('index reconvergence: first comparison after NATS returns back near the pre-stop overlap', () => {
    const points: Array<[number, number]> = [
      [3000, 0.97],
      [5000, 0.99],
      [7000, 0.98],
      [9000, 0.98],
      [12_000, 0.7],
      [20_000, 0.5],
      [30_500, 0.6],
      [31_500, 0.9],
      [32_500, 0.97],
      [33_500, 0.99],
    ];
    const f = facts({ indexAgreement: points.map(([tMs, j]) => ({ tMs, replicas: 3, digestsEqual: false, minJaccard: j })) });
    expect(indexReconvergence(f, 10_000, 30_000)).to.deep.equal({ ms: 2500, before: 0.98, outageMin: 0.5 });
    expect(indexReconvergence(facts({}), 10_000, 30_000).ms).to.equal(null);
  });

  it('key overlap: Jaccard per endpoint, mean over endpoints, lowest pair', () => {
    const v = (m: Record<string, string[]>) => new Map(Object.entries(m).map(([k, xs]) => [k, new Set(xs)] as const));
    expect(jaccard(new Set(['a', 'b']), new Set(['b', 'c']))).to.be.closeTo(1 / 3, 1e-9);
    expect(minPairJaccard([v({ e1: ['a', 'b'], e2: ['x'] }), v({ e1: ['a', 'b'], e2: ['x'] }), v({ e1: ['a'], e2: [] })])).to.be.closeTo(
      0.25,
      1e-9,
    );
  });

  it('accuracy recovery: first 3 s window after NATS returns within 5 points of before', () => {
    const perSec: Array<[number, number, number]> = [];
    for (let s = 0; s < 40; s++) perSec.push([s, 10, s < 10 ? 9 : s < 33 ? 5 : 9]);
    const f = facts({ accuracyPerSecond: { r0: perSec } });
    expect(accuracyRecoveryS(f, 10, 30, 40)).to.deep.equal({ s: 3, before: 0.9 });
  });

  it('window hit sums per-second sums over [from, to)', () => {
    const ps = [0, 1, 2, 3].map((s) => ({ s, requests: 1, cachedTokens: s * 100, promptTokens: 1000 }));
    expect(windowHit(ps, 1, 3)).to.deep.equal({ requests: 2, rate: 0.15 });
  });
});

describe('test/kit/envoy-config: router replicas', () => {
  it('lists every replica in the ext_proc cluster', () => {
    const doc = buildEnvoyConfig({
      variant: 'override-host',
      routerAddresses: ['127.0.0.1:9001', '127.0.0.1:9002', '127.0.0.1:9003'],
      engines: ['127.0.0.1:8001'],
    });
    const clusters = (
      doc['static_resources'] as {
        clusters: Array<{
          name: string;
          load_assignment: {
            endpoints: Array<{ lb_endpoints: Array<{ endpoint: { address: { socket_address: { port_value: number } } } }> }>;
          };
        }>;
      }
    ).clusters;
    const ext = clusters.find((c) => c.name === 'cacheroute_extproc');
    expect(ext?.load_assignment.endpoints[0]?.lb_endpoints.map((e) => e.endpoint.address.socket_address.port_value)).to.deep.equal([
      9001, 9002, 9003,
    ]);
    expect(() => buildEnvoyConfig({ variant: 'override-host', routerAddresses: [] })).to.throw(/empty/);
  });
});
