import { expect } from 'chai';
import { expandPreset } from '../../../../bench/presets/expand.js';
import {
  LOW_PRIORITY_ENGINE_NICE,
  REAL_VLLM_LOW_LOAD,
  REAL_VLLM_LOW_LOAD_HOP,
  REAL_VLLM_LOW_LOAD_HOP_GO,
  REAL_VLLM_LOW_LOAD_INPROC,
  REAL_VLLM_LOW_LOAD_INPROC_HOP,
  REAL_VLLM_LOW_LOAD_PRIORITY,
  REAL_VLLM_LOW_LOAD_SPLIT,
  SPLIT_ENGINE_CORE,
  SPLIT_ROUTING_TIER_CORE,
} from '../../../../bench/presets/real-vllm-low-load.js';

/** A preset's runs grouped by block, in run order. */
function byBlock<R extends { readonly block: string }>(runs: readonly R[]): Map<string, R[]> {
  const out = new Map<string, R[]>();
  for (const r of runs) out.set(r.block, [...(out.get(r.block) ?? []), r]);
  return out;
}

describe('bench/presets/real-vllm-low-load-priority', () => {
  const runs = expandPreset(REAL_VLLM_LOW_LOAD_PRIORITY);
  const half = (niced: boolean) => runs.filter((r) => (r.engines.vllm?.nice ?? 0) > 0 === niced);

  it('runs the same rounds twice: engines at the default priority, then the same engines niced', () => {
    const plain = half(false);
    const niced = half(true);
    expect(plain.length).to.equal(niced.length).and.to.be.greaterThan(0);
    // The niced half comes second, on its own engine fleet (run-preset starts one per label).
    expect(runs.slice(plain.length).every((r) => r.engines.vllm?.nice === LOW_PRIORITY_ENGINE_NICE)).to.equal(true);
    expect(new Set(plain.map((r) => r.engines.label)).size).to.equal(1);
    expect(new Set(niced.map((r) => r.engines.label)).size).to.equal(1);
    expect(plain[0]?.engines.label).to.not.equal(niced[0]?.engines.label);
    // Same workloads, contenders, order and seeds in both halves; only the engines differ.
    const shape = (r: (typeof runs)[number]) => ({ contender: r.contender.label, scenario: r.scenario, seedOffset: r.seedOffset ?? 0 });
    expect(niced.map(shape)).to.deep.equal(plain.map(shape));
  });

  it('puts Envoy round-robin first in each block, then cacheroute and sglang-router in 3 rotated rounds with a seed each', () => {
    for (const [block, mine] of byBlock(runs)) {
      expect(
        mine.map((r) => r.contender.label),
        block,
      ).to.deep.equal([
        'envoy-round-robin',
        'cacheroute-cache-aware#1',
        'sglang-cache_aware#1',
        'sglang-cache_aware#2',
        'cacheroute-cache-aware#2',
        'cacheroute-cache-aware#3',
        'sglang-cache_aware#3',
      ]);
      expect(
        mine.slice(1).map((r) => r.seedOffset ?? 0),
        block,
      ).to.deep.equal([0, 0, 1, 1, 2, 2]);
    }
  });
});

describe('bench/presets/real-vllm-low-load-hop', () => {
  const runs = expandPreset(REAL_VLLM_LOW_LOAD_HOP);

  it('runs Envoy round-robin first, then cacheroute, sglang-router and sglang-router behind the null hop in 3 rotated rounds with a seed each', () => {
    const blocks = byBlock(runs);
    expect(blocks.size).to.equal(2);
    for (const [block, mine] of blocks) {
      expect(
        mine.map((r) => r.contender.label),
        block,
      ).to.deep.equal([
        'envoy-round-robin',
        'cacheroute-cache-aware#1',
        'sglang-cache_aware#1',
        'sglang-cache_aware-behind-null-hop#1',
        'sglang-cache_aware#2',
        'sglang-cache_aware-behind-null-hop#2',
        'cacheroute-cache-aware#2',
        'sglang-cache_aware-behind-null-hop#3',
        'cacheroute-cache-aware#3',
        'sglang-cache_aware#3',
      ]);
      expect(
        mine.slice(1).map((r) => r.seedOffset ?? 0),
        block,
      ).to.deep.equal([0, 0, 0, 1, 1, 1, 2, 2, 2]);
    }
  });

  it('puts the same sglang-router behind the hop as the one it is compared with', () => {
    const hop = runs.find((r) => r.contender.kind === 'null-hop')?.contender;
    const bare = runs.find((r) => r.contender.kind === 'sglang-router')?.contender;
    expect(hop?.kind === 'null-hop' ? hop.inner.policy : undefined).to.equal(bare?.kind === 'sglang-router' ? bare.policy : 'none');
    // Engines at the default priority: this preset measures the shipped setting.
    expect(runs.every((r) => (r.engines.vllm?.nice ?? 0) === 0)).to.equal(true);
  });
});

describe('bench/presets/real-vllm-low-load-hop-go', () => {
  const runs = expandPreset(REAL_VLLM_LOW_LOAD_HOP_GO);

  it("adds the Go processor's hop to the rotation: four contenders in 3 rotated rounds per workload", () => {
    for (const [block, mine] of byBlock(runs)) {
      expect(
        mine.map((r) => r.contender.label),
        block,
      ).to.deep.equal([
        'envoy-round-robin',
        'cacheroute-cache-aware#1',
        'sglang-cache_aware#1',
        'sglang-cache_aware-behind-null-hop#1',
        'sglang-cache_aware-behind-null-hop-go#1',
        'sglang-cache_aware#2',
        'sglang-cache_aware-behind-null-hop#2',
        'sglang-cache_aware-behind-null-hop-go#2',
        'cacheroute-cache-aware#2',
        'sglang-cache_aware-behind-null-hop#3',
        'sglang-cache_aware-behind-null-hop-go#3',
        'cacheroute-cache-aware#3',
        'sglang-cache_aware#3',
      ]);
    }
    const go = runs.find((r) => r.contender.label.startsWith('sglang-cache_aware-behind-null-hop-go'))?.contender;
    expect(go?.kind === 'null-hop' ? go.processor : undefined).to.equal('go');
  });
});

type Run = ReturnType<typeof expandPreset>[number];

/** The preset runs real-vllm-low-load as it is: the same contenders, order, workloads and seeds. */
function expectPlainShape(variant: readonly Run[], plain: readonly Run[]): void {
  const shape = (r: Run) => ({ block: r.block, contender: r.contender.label, scenario: r.scenario, seedOffset: r.seedOffset ?? 0 });
  expect(variant.length).to.be.greaterThan(0);
  expect(variant.map(shape)).to.deep.equal(plain.map(shape));
}

/** run-preset starts one fleet per engine label: the variant's fleet is never the plain one. */
function expectOwnFleet(variant: readonly Run[], plain: readonly Run[]): void {
  const labels = new Set(variant.map((r) => r.engines.label));
  for (const r of plain) expect(labels.has(r.engines.label)).to.equal(false);
}

describe('bench/presets/real-vllm-low-load-split', () => {
  const split = expandPreset(REAL_VLLM_LOW_LOAD_SPLIT);
  const plain = expandPreset(REAL_VLLM_LOW_LOAD);

  it('runs real-vllm-low-load as it is: the same contenders, order, workloads and seeds', () => expectPlainShape(split, plain));

  it('puts both engines on one core and the routing tier on the other, on a fleet of its own', () => {
    for (const r of split) {
      expect(r.engines.vllm?.sharedCore).to.equal(SPLIT_ENGINE_CORE);
      expect(r.engines.routingTierCore).to.equal(SPLIT_ROUTING_TIER_CORE);
      expect((r.engines.vllm?.nice ?? 0) === 0).to.equal(true);
    }
    expect(SPLIT_ENGINE_CORE).to.not.equal(SPLIT_ROUTING_TIER_CORE);
    expectOwnFleet(split, plain);
  });
});

describe('bench/presets/real-vllm-low-load-inproc', () => {
  const inproc = expandPreset(REAL_VLLM_LOW_LOAD_INPROC);
  const plain = expandPreset(REAL_VLLM_LOW_LOAD);

  it('runs real-vllm-low-load as it is: the same contenders, order, workloads and seeds', () => expectPlainShape(inproc, plain));

  it('runs the engines with their worker in-process and otherwise as the plain preset, on a fleet of its own', () => {
    for (const r of inproc) {
      expect(r.engines.vllm?.inProcessWorker).to.equal(true);
      expect(r.engines.vllm?.sharedCore).to.equal(undefined);
      expect(r.engines.routingTierCore).to.equal(undefined);
      expect((r.engines.vllm?.nice ?? 0) === 0).to.equal(true);
      const { inProcessWorker: _drop, ...rest } = r.engines.vllm ?? {};
      const twin = plain.find((p) => p.block === r.block);
      expect(rest).to.deep.equal(twin?.engines.vllm ?? {});
    }
    expectOwnFleet(inproc, plain);
  });
});

describe('bench/presets/real-vllm-low-load-inproc-hop', () => {
  const runs = expandPreset(REAL_VLLM_LOW_LOAD_INPROC_HOP);

  it('runs the agentic block on in-process engines: Envoy round-robin, then four contenders in 3 rotated rounds', () => {
    expect(new Set(runs.map((r) => r.block))).to.deep.equal(new Set(['agentic']));
    for (const r of runs) expect(r.engines.vllm?.inProcessWorker).to.equal(true);
    expect(runs[0]?.contender.label).to.equal('envoy-round-robin');
    const labels = runs.slice(1).map((r) => r.contender.label);
    expect(labels).to.have.length(12);
    expect(labels.slice(0, 4)).to.deep.equal([
      'cacheroute-cache-aware#1',
      'cacheroute-cache-aware-quiet#1',
      'sglang-cache_aware#1',
      'sglang-cache_aware-behind-null-hop#1',
    ]);
    expect(labels.slice(4, 8)).to.deep.equal([
      'cacheroute-cache-aware-quiet#2',
      'sglang-cache_aware#2',
      'sglang-cache_aware-behind-null-hop#2',
      'cacheroute-cache-aware#2',
    ]);
    const quiet = runs.find((r) => r.contender.label.startsWith('cacheroute-cache-aware-quiet'))?.contender;
    const overrides = quiet?.kind === 'cacheroute' ? quiet.routerOverrides : undefined;
    const enabled = (o: unknown): unknown => (o as { enabled?: unknown } | undefined)?.enabled;
    expect([enabled(overrides?.engineMetrics), enabled(overrides?.health)]).to.deep.equal([false, false]);
  });
});
