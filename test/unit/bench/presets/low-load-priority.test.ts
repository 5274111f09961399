import { expect } from 'chai';
import { expandPreset } from '../../../../bench/presets/expand.js';
import { LOW_PRIORITY_ENGINE_NICE, REAL_VLLM_LOW_LOAD_PRIORITY } from '../../../../bench/presets/real-vllm-low-load.js';

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
    for (const block of new Set(runs.map((r) => r.block))) {
      const mine = runs.filter((r) => r.block === block);
      expect(mine.map((r) => r.contender.label), block).to.deep.equal([
        'envoy-round-robin',
        'cacheroute-cache-aware#1',
        'sglang-cache_aware#1',
        'sglang-cache_aware#2',
        'cacheroute-cache-aware#2',
        'cacheroute-cache-aware#3',
        'sglang-cache_aware#3',
      ]);
      expect(mine.slice(1).map((r) => r.seedOffset ?? 0), block).to.deep.equal([0, 0, 1, 1, 2, 2]);
    }
  });
});
