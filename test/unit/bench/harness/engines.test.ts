import { expect } from 'chai';
import { checkSplit } from '../../../../bench/harness/engines.js';

describe('bench/harness/engines checkSplit', () => {
  const base = { label: 'x', count: 2, flags: {}, rationale: '' } as const;

  it('accepts real engines on one core and the routing tier on another, and setups without a split', () => {
    expect(() => checkSplit({ ...base, kind: 'vllm', vllm: { sharedCore: 1 }, routingTierCore: 0 })).to.not.throw();
    expect(() => checkSplit({ ...base, kind: 'vllm' })).to.not.throw();
    expect(() => checkSplit(base)).to.not.throw();
  });

  it('refuses a split the engines would not follow', () => {
    expect(() => checkSplit({ ...base, routingTierCore: 0 })).to.throw(/for real engines/);
    expect(() => checkSplit({ ...base, kind: 'vllm', routingTierCore: 0 })).to.throw(/needs vllm\.sharedCore/);
    expect(() => checkSplit({ ...base, kind: 'vllm', vllm: { sharedCore: 0 }, routingTierCore: 0 })).to.throw(/both core 0/);
  });
});
