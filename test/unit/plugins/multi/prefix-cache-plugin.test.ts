import { expect } from 'chai';
import type { RouteDecision } from '../../../../src/core/types.js';
import { BlockHasher } from '../../../../src/prefix-cache/block-hasher.js';
import { PrefixIndex } from '../../../../src/prefix-cache/prefix-index.js';
import { PrefixCachePlugin } from '../../../../src/plugins/multi/prefix-cache-plugin.js';
import { getScratch } from '../../../../src/framework/cycle-scratch.js';
import { AFFINITY_EVIDENCE } from '../../../../src/plugins/shared/cycle-keys.js';
import { candidates, cycle, endpoint, text } from '../../builders.js';

function routedTo(index: number): RouteDecision {
  return {
    requestId: 'r',
    endpoint: endpoint(index),
    fallbacks: [],
    strategy: 's',
    reason: 'cold',
    matchedBlocks: 0,
    totalBlocks: 0,
    candidates: [],
    decisionMicros: 0,
  };
}

describe('PrefixCachePlugin', () => {
  const make = (): PrefixCachePlugin => {
    const plugin = new PrefixCachePlugin(
      'prefix',
      new BlockHasher({ blockChars: 8, maxBlocks: 64 }),
      new PrefixIndex({ endpoints: 4, capacityBlocks: 100 }),
    );
    plugin.onEndpointsChanged([0, 1, 2, 3].map((i) => endpoint(i)));
    return plugin;
  };

  it('is neutral (0 for all) on a cold request and publishes zero evidence', () => {
    const p = make();
    const st = cycle({ prefix: text(1, 64) });
    expect(Array.from(p.score(st, candidates(4)))).to.deep.equal([0, 0, 0, 0]);
    expect(getScratch(st, AFFINITY_EVIDENCE)!.totalBlocks).to.equal(8);
  });

  it('scores the matched fraction after the routed hook taught the index', () => {
    const p = make();
    const shared = text(2, 48); // 6 blocks
    const first = cycle({ prefix: shared + text(3, 16) });
    p.score(first, candidates(4));
    p.onRouted(first, routedTo(2));
    const st = cycle({ prefix: shared + text(4, 16) }); // 8 blocks, 6 shared
    const scores = Array.from(p.score(st, candidates(4)));
    expect(scores).to.deep.equal([0, 0, 6 / 8, 0]);
    const ev = getScratch(st, AFFINITY_EVIDENCE)!;
    expect(Array.from(ev.matchedByEndpoint)).to.deep.equal([0, 0, 6, 0]);
  });

  it('scores only the candidates it is given but publishes evidence for all endpoints', () => {
    const p = make();
    const prefix = text(5, 32);
    const a = cycle({ prefix });
    p.onRouted(a, routedTo(3));
    const st = cycle({ prefix });
    const subset = candidates(4).slice(0, 2);
    expect(Array.from(p.score(st, subset))).to.deep.equal([0, 0]);
    expect(getScratch(st, AFFINITY_EVIDENCE)!.matchedByEndpoint[3]).to.equal(4);
  });

  it('ignores prompts shorter than one block', () => {
    const p = make();
    const st = cycle({ prefix: 'short' });
    expect(Array.from(p.score(st, candidates(2)))).to.deep.equal([0, 0]);
    p.onRouted(st, routedTo(0));
    expect(p.index.stats().entries).to.equal(0);
  });

  it('evicts endpoints that leave the registry', () => {
    const p = make();
    const prefix = text(6, 32);
    p.onRouted(cycle({ prefix }), routedTo(1));
    expect(p.index.size(1)).to.equal(4);
    p.onEndpointsChanged([0, 2, 3].map((i) => endpoint(i)));
    expect(p.index.size(1)).to.equal(0);
  });
});
