import { expect } from 'chai';
import { rank, recommendation, TIE, type RankedRow } from '../../../src/cli/recommend.js';

const row = (label: string, p50: number, p99: number, over: Partial<RankedRow> = {}): RankedRow => ({
  label,
  failed: 0,
  ttftP50Ms: p50,
  ttftP99Ms: p99,
  hitRate: 0.5,
  busiestShare: 0.3,
  ...over,
});

describe('cli: recommend', () => {
  it('ranks by TTFT p99, ties within TIE broken by p50 then hit rate', () => {
    const rows = [row('slow', 50, 400), row('tail', 40, 200), row('median', 30, 200 * (1 + TIE * 0.9)), row('far', 10, 300)];
    expect(rank(rows).map((r) => r.label)).to.deep.equal(['median', 'tail', 'far', 'slow']);
    const hit = [row('a', 30, 100, { hitRate: 0.2 }), row('b', 30, 100, { hitRate: 0.7 })];
    expect(rank(hit).map((r) => r.label)).to.deep.equal(['b', 'a']);
  });

  it('puts strategies that failed more requests last, whatever their latency', () => {
    const rows = [row('fast-but-failing', 1, 2, { failed: 3 }), row('ok', 50, 500)];
    expect(rank(rows).map((r) => r.label)).to.deep.equal(['ok', 'fast-but-failing']);
    expect(recommendation(rank(rows)))
      .to.contain('use ok')
      .and.contain('failed 3');
  });

  it('says how far ahead the choice is, or that it is tied', () => {
    expect(recommendation(rank([row('a', 10, 100), row('b', 20, 250)]))).to.equal(
      'use a: TTFT p99 100.0 ms, 2.50x better than the next best (b, 250.0 ms)',
    );
    expect(recommendation(rank([row('a', 10, 100), row('b', 20, 102)]))).to.contain('tied with b');
    expect(recommendation([])).to.equal('no strategy ran');
  });

  it('treats a NaN p99 (nothing served) as worst', () => {
    expect(rank([row('none', Number.NaN, Number.NaN), row('some', 5, 9)]).map((r) => r.label)).to.deep.equal(['some', 'none']);
  });
});
