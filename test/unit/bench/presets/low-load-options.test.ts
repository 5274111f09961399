import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expandPreset } from '../../../../bench/presets/expand.js';
import { applyOptions } from '../../../../bench/presets/options.js';
import { REAL_VLLM_LOW_LOAD, SPLIT_ENGINE_CORE, SPLIT_ROUTING_TIER_CORE } from '../../../../bench/presets/real-vllm-low-load.js';
import { TINY } from '../../../../bench/presets/tiny.js';
import type { MatrixBlock } from '../../../../bench/presets/types.js';
import { REPO_ROOT } from '../../../kit/repo-paths.js';

type Run = ReturnType<typeof expandPreset>[number];

/** A preset's runs grouped by block, in run order. */
function byBlock(runs: readonly Run[]): Map<string, Run[]> {
  const out = new Map<string, Run[]>();
  for (const r of runs) out.set(r.block, [...(out.get(r.block) ?? []), r]);
  return out;
}

const shape = (r: Run) => ({ block: r.block, contender: r.contender.label, scenario: r.scenario, seedOffset: r.seedOffset ?? 0 });
const variant = (...pairs: string[]) => expandPreset(applyOptions(REAL_VLLM_LOW_LOAD, pairs));

describe('bench/presets/real-vllm-low-load and its options', () => {
  const plain = expandPreset(REAL_VLLM_LOW_LOAD);

  it('by default runs what the committed result ran: the same blocks, engines, contenders and seeds', () => {
    const committed = JSON.parse(readFileSync(join(REPO_ROOT, 'bench', 'results', 'real-vllm-low-load', 'run.json'), 'utf8')) as {
      preset: { blocks: MatrixBlock[] };
    };
    expect(JSON.parse(JSON.stringify(REAL_VLLM_LOW_LOAD.blocks))).to.deep.equal(committed.preset.blocks);
  });

  it('puts Envoy round-robin first in each block, then 3 contenders in 4 rotated rounds with a seed each', () => {
    for (const [block, mine] of byBlock(plain)) {
      expect(mine[0]?.contender.label, block).to.equal('envoy-round-robin');
      expect(mine.slice(1, 4).map((r) => r.contender.label)).to.deep.equal([
        'cacheroute-cache-aware#1',
        'sglang-cache_aware#1',
        'vllm-cache_aware#1',
      ]);
      expect(mine.slice(4, 7).map((r) => r.contender.label)).to.deep.equal([
        'sglang-cache_aware#2',
        'vllm-cache_aware#2',
        'cacheroute-cache-aware#2',
      ]);
      expect(mine.slice(1).map((r) => r.seedOffset ?? 0)).to.deep.equal([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
      for (const r of mine) expect(r.engines.vllm?.inProcessWorker, block).to.equal(true);
    }
  });

  it('engines=split puts both engines on one core and the routing tier on the other, otherwise the same runs on a fleet of its own', () => {
    const split = variant('engines=split');
    expect(split.map(shape)).to.deep.equal(plain.map(shape));
    for (const r of split) {
      expect(r.engines.vllm?.sharedCore).to.equal(SPLIT_ENGINE_CORE);
      expect(r.engines.routingTierCore).to.equal(SPLIT_ROUTING_TIER_CORE);
      expect(r.engines.vllm?.inProcessWorker).to.equal(undefined);
    }
    expect(SPLIT_ENGINE_CORE).to.not.equal(SPLIT_ROUTING_TIER_CORE);
    const labels = new Set(plain.map((r) => r.engines.label));
    for (const r of split) expect(labels.has(r.engines.label)).to.equal(false);
  });

  it('engines=shared and nice=10 give the stock engines at that niceness, on a fleet label of their own', () => {
    const niced = variant('engines=shared', 'nice=10');
    expect(niced.map(shape)).to.deep.equal(plain.map(shape));
    for (const r of niced) {
      expect(r.engines.vllm?.nice).to.equal(10);
      expect(r.engines.vllm?.inProcessWorker).to.equal(undefined);
      expect(r.engines.label).to.match(/-nice10$/);
    }
  });

  it('controls=quiet+hop adds the quiet router and sglang-router behind the do-nothing hop to every round', () => {
    const runs = variant('controls=quiet+hop', 'rounds=2', 'workloads=agentic');
    expect(new Set(runs.map((r) => r.block))).to.deep.equal(new Set(['agentic']));
    expect(runs.map((r) => r.contender.label)).to.deep.equal([
      'envoy-round-robin',
      'cacheroute-cache-aware#1',
      'sglang-cache_aware#1',
      'vllm-cache_aware#1',
      'cacheroute-cache-aware-quiet#1',
      'sglang-cache_aware-behind-null-hop#1',
      'sglang-cache_aware#2',
      'vllm-cache_aware#2',
      'cacheroute-cache-aware-quiet#2',
      'sglang-cache_aware-behind-null-hop#2',
      'cacheroute-cache-aware#2',
    ]);
    const hop = runs.find((r) => r.contender.kind === 'null-hop')?.contender;
    const bare = runs.find((r) => r.contender.kind === 'sglang-router')?.contender;
    expect(hop?.kind === 'null-hop' ? hop.inner.policy : undefined).to.equal(bare?.kind === 'sglang-router' ? bare.policy : 'none');
  });

  it('records the options it was built with and says which differ from the defaults', () => {
    const p = applyOptions(REAL_VLLM_LOW_LOAD, ['rounds=3']);
    expect(p.chosenOptions).to.deep.equal({ engines: 'inproc', nice: '0', controls: 'none', rounds: '3', workloads: 'both' });
    expect(p.description).to.contain('Options: rounds=3.');
    expect(REAL_VLLM_LOW_LOAD.description).not.to.contain('Options:');
  });

  it('refuses an unknown option, a value outside its list or range, and options for a preset that takes none', () => {
    expect(() => applyOptions(REAL_VLLM_LOW_LOAD, ['speed=fast'])).to.throw(/name one of engines, nice, controls, rounds, workloads/);
    expect(() => applyOptions(REAL_VLLM_LOW_LOAD, ['engines=gpu'])).to.throw(/'gpu' is not one of inproc\|shared\|split/);
    expect(() => applyOptions(REAL_VLLM_LOW_LOAD, ['nice=20'])).to.throw(/is not one of 0\.\.19/);
    expect(() => applyOptions(REAL_VLLM_LOW_LOAD, ['rounds=two'])).to.throw(/is not one of 1\.\.8/);
    expect(() => applyOptions(REAL_VLLM_LOW_LOAD, ['engines'])).to.throw(/expected name=value/);
    expect(() => applyOptions(TINY, ['rounds=2'])).to.throw(/takes no --option/);
    expect(applyOptions(TINY, [])).to.equal(TINY);
  });
});
