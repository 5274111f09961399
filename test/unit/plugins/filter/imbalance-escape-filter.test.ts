import { expect } from 'chai';
import { ImbalanceEscapeFilter } from '../../../../src/plugins/filter/imbalance-escape-filter.js';
import { getScratch } from '../../../../src/framework/cycle-scratch.js';
import { IMBALANCE_DROPPED } from '../../../../src/plugins/shared/cycle-keys.js';
import { candidate, candidates, cycle } from '../../builders.js';

describe('ImbalanceEscapeFilter', () => {
  const f = new ImbalanceEscapeFilter('imb', { absThreshold: 8, relThreshold: 1.5, staleAfterMs: 1000 });

  const table: Array<{ name: string; loads: number[]; kept: number[] }> = [
    { name: 'all equal', loads: [5, 5, 5], kept: [0, 1, 2] },
    { name: 'gap exactly abs is not imbalance', loads: [0, 8, 3], kept: [0, 1, 2] },
    { name: 'gap above abs from idle', loads: [0, 9, 3], kept: [0, 2] },
    { name: 'abs exceeded but not rel', loads: [20, 29, 25], kept: [0, 1, 2] },
    { name: 'abs and rel exceeded', loads: [20, 31, 25], kept: [0, 2] },
    { name: 'drops every overloaded endpoint, keeps middle ones', loads: [2, 40, 30, 10], kept: [0, 3] },
    { name: 'single candidate untouched', loads: [100], kept: [0] },
  ];
  for (const t of table) {
    it(t.name, () => {
      const st = cycle();
      const out = f.filter(st, candidates(t.loads.length, t.loads));
      expect(out.map((c) => c.endpoint.index)).to.deep.equal(t.kept);
      const dropped = getScratch(st, IMBALANCE_DROPPED);
      if (t.kept.length === t.loads.length) {
        expect(dropped).to.equal(undefined);
        expect(st.notes).to.deep.equal([]);
      } else {
        expect(dropped!.map((e) => e.index)).to.deep.equal(t.loads.map((_, i) => i).filter((i) => !t.kept.includes(i)));
        expect(st.notes[0]).to.match(/imbalance escape/);
      }
    });
  }

  it('uses fresh engine queues (running + waiting) and ignores stale ones', () => {
    const fresh = [
      candidate(0, { inflightRequests: 1 }),
      candidate(1, { inflightRequests: 1, waiting: 15, running: 5, metricsAgeMs: 100 }),
    ];
    expect(f.filter(cycle(), fresh).map((c) => c.endpoint.index)).to.deep.equal([0]);
    const stale = [
      candidate(0, { inflightRequests: 1 }),
      candidate(1, { inflightRequests: 1, waiting: 15, running: 5, metricsAgeMs: 5000 }),
    ];
    expect(f.filter(cycle(), stale)).to.have.length(2);
  });
});
