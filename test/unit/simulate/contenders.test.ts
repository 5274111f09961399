import { expect } from 'chai';
import { contender, contenderNames, presetOf } from '../../../src/simulate/contenders.js';
import { GPU_LIKE_ENGINE_MODEL } from '../../../src/simulate/engine/batching-engine.js';
import { simulate } from '../../../src/simulate/fleet-simulator.js';
import type { SimRequest } from '../../../src/simulate/types.js';
import { promptFromBlockIds } from '../../../src/simulate/block-prompt.js';
import { seededRng } from '../../../src/util/rng.js';

/** 12 groups of 40 shared blocks, each request 8 blocks of its own; Poisson 30 req/s. */
function workload(n: number): SimRequest[] {
  const rng = seededRng(4);
  let t = 0;
  const cache = new Map<number, string>();
  return Array.from({ length: n }, (_, i) => {
    t += (-Math.log(1 - rng.next()) * 1000) / 30;
    const g = rng.int(12);
    const ids = [...Array.from({ length: 40 }, (_, b) => g * 1000 + b), ...Array.from({ length: 8 }, (_, b) => 100_000 + i * 8 + b)];
    return { id: `r${i}`, atMs: t, api: 'completions' as const, prompt: promptFromBlockIds(ids, 16, 48 * 16, i, cache), outputTokens: 8 };
  });
}

describe('simulator contenders', () => {
  const reqs = workload(300);
  const fleet = Array.from({ length: 4 }, () => ({ model: { ...GPU_LIKE_ENGINE_MODEL, kvCacheBlocks: 400 } }));
  const run = (name: string) => simulate(reqs, fleet, contender(name), { seed: 1 }).summary;

  it('every named contender builds and serves every request', () => {
    for (const name of contenderNames()) {
      const s = run(name);
      expect(s.ok, name).to.equal(300);
    }
  });

  it('the oracle, seeing exact caches and queues, is no worse than round-robin and keeps the cache hits', () => {
    const rr = run('round-robin');
    const oracle = run('oracle');
    expect(oracle.hitRate).to.be.greaterThan(rr.hitRate + 0.2);
    expect(oracle.ttftP50Ms).to.be.lessThan(rr.ttftP50Ms);
    expect(oracle.ttftP99Ms).to.be.at.most(rr.ttftP99Ms);
  });

  it('every settings variant builds a router that parses and serves (hot-prefix replication on cache-aware and auto too)', () => {
    for (const name of [
      'cacheroute:cache-aware+trust-stale',
      'cacheroute:cache-aware+no-metrics',
      'cacheroute:cache-aware+hotspot',
      'cacheroute:auto+hotspot',
      'cacheroute:cache-aware+hotspot+trust-stale',
    ])
      expect(run(name).ok, name).to.equal(300);
  });

  it('names a variant of a preset and refuses unknown names', () => {
    expect(contender('cacheroute:cache-aware+trust-stale').source).to.contain('trust-stale');
    expect(() => contender('cacheroute:nope')).to.throw(/unknown cacheroute preset/);
    expect(() => contender('cacheroute:cache-aware+nope')).to.throw(/unknown variant/);
    expect(() => contender('nope')).to.throw(/unknown contender/);
  });

  it("says which fixed preset a contender runs, under its own label or a peer's", () => {
    expect(presetOf('cacheroute:cache-aware')).to.equal('cache-aware');
    expect(presetOf('round-robin')).to.equal('round-robin');
    expect(presetOf('prefix-hash')).to.equal('prefix-hash');
    for (const n of ['cacheroute:cache-aware+trust-stale', 'llm-d-weighted', 'sglang-cache-aware', 'oracle', 'cacheroute:nope'])
      expect(presetOf(n), n).to.equal(undefined);
  });

  it("tells a TTFT preset's model the engines' sequence slots (engineSlots), and no other preset", () => {
    // Engines with 2 slots each: past them a request waits for a running one to finish.
    const slotFleet = Array.from({ length: 4 }, () => ({ model: { ...GPU_LIKE_ENGINE_MODEL, kvCacheBlocks: 400, maxNumSeqs: 2 } }));
    const long = reqs.map((r) => ({ ...r, outputTokens: 64 }));
    /** The slots the first router replica's ttft-model was built with, after a run. */
    const slotsOf = (opts: { engineSlots?: number }): number => {
      const c = contender('cacheroute:predicted-ttft', opts);
      let policy: unknown;
      const s = simulate(
        long.slice(0, 40),
        slotFleet,
        { ...c, create: (ctx, n) => (policy = c.create(ctx, n)) as ReturnType<typeof c.create> },
        {
          seed: 1,
        },
      ).summary;
      expect(s.ok).to.equal(40);
      const sched = (policy as { schedulers: { plugin(name: string): unknown }[] }).schedulers[0]!;
      return (sched.plugin('ttft-model') as { model: { opts: { maxNumSeqs: number } } }).model.opts.maxNumSeqs;
    };
    expect(slotsOf({ engineSlots: 2 })).to.equal(2);
    expect(slotsOf({}), "untold: the plugin's default").to.equal(256);
    const aware = (opts: { engineSlots?: number }) =>
      simulate(long, slotFleet, contender('cacheroute:cache-aware', opts), { seed: 1 }).summary;
    expect(aware({ engineSlots: 2 })).to.deep.include({ ttftP99Ms: aware({}).ttftP99Ms, hitRate: aware({}).hitRate });
  });
});
