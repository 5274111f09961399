import { expect } from 'chai';
import { hotPrefixWorkload } from '../../../../bench/workloads/hot-prefix.js';

describe('bench/workloads/hot-prefix', () => {
  const params = {
    groups: 8,
    hotShare: 0.6,
    requests: 2000,
    systemPromptTokens: 32,
    questionTokens: 8,
    outputTokens: 4,
    api: 'completions' as const,
    arrival: { kind: 'poisson' as const, qps: 50 },
    seed: 11,
  };

  it('the hot group carries about hotShare of the traffic, the rest is spread', () => {
    const w = hotPrefixWorkload(params);
    const counts = new Map<string, number>();
    for (const r of w.requests) counts.set(r.group, (counts.get(r.group) ?? 0) + 1);
    expect((counts.get('g0') ?? 0) / 2000).to.be.closeTo(0.6, 0.03);
    for (let g = 1; g < 8; g++) expect((counts.get(`g${g}`) ?? 0) / 2000).to.be.closeTo(0.4 / 7, 0.02);
  });

  it('is deterministic and every question is unique', () => {
    const a = hotPrefixWorkload({ ...params, requests: 100 });
    const b = hotPrefixWorkload({ ...params, requests: 100 });
    expect(JSON.stringify(a)).to.equal(JSON.stringify(b));
    expect(new Set(a.requests.map((r) => r.prompt)).size).to.equal(100);
  });

  it('needs a hot share in (0,1) and at least two groups', () => {
    expect(() => hotPrefixWorkload({ ...params, hotShare: 1 })).to.throw(RangeError);
    expect(() => hotPrefixWorkload({ ...params, groups: 1 })).to.throw(RangeError);
  });
});
