import { expect } from 'chai';
import type { DecisionReason } from '../../../../src/core/types.js';
import { affinityReason } from '../../../../src/plugins/shared/affinity-reason.js';
import { setScratch } from '../../../../src/framework/cycle-scratch.js';
import { AFFINITY_EVIDENCE, IMBALANCE_DROPPED } from '../../../../src/plugins/shared/cycle-keys.js';
import { candidates, cycle, endpoint } from '../../builders.js';

describe('affinityReason', () => {
  it('is undefined without evidence', () => {
    expect(affinityReason(cycle(), candidates(2), 0)).to.equal(undefined);
  });

  // matched is per endpoint index; candidates are endpoints 0..2; endpoint 3 may be "dropped".
  const table: Array<{ name: string; matched: number[]; dropped?: number[]; chosen: number; want: DecisionReason }> = [
    { name: 'nothing cached anywhere', matched: [0, 0, 0, 0], chosen: 1, want: 'cold' },
    { name: 'chosen holds the best match', matched: [0, 5, 2, 0], chosen: 1, want: 'affinity' },
    { name: 'chosen ties the best match', matched: [5, 5, 0, 0], chosen: 0, want: 'affinity' },
    { name: 'load beat a better match', matched: [0, 5, 2, 0], chosen: 2, want: 'load' },
    { name: 'load beat the only match', matched: [0, 5, 0, 0], chosen: 0, want: 'load' },
    { name: 'escape removed the affinity target', matched: [0, 1, 0, 6], dropped: [3], chosen: 1, want: 'imbalance' },
    { name: 'escape removed the only match', matched: [0, 0, 0, 6], dropped: [3], chosen: 2, want: 'imbalance' },
    { name: 'escape removed a worse match only', matched: [0, 6, 0, 2], dropped: [3], chosen: 1, want: 'affinity' },
    { name: 'escape happened but nothing cached', matched: [0, 0, 0, 0], dropped: [3], chosen: 0, want: 'cold' },
  ];
  for (const t of table) {
    it(t.name, () => {
      const st = cycle();
      setScratch(st, AFFINITY_EVIDENCE, { matchedByEndpoint: t.matched, totalBlocks: 8 });
      if (t.dropped)
        setScratch(
          st,
          IMBALANCE_DROPPED,
          t.dropped.map((i) => endpoint(i)),
        );
      expect(affinityReason(st, candidates(3), t.chosen)).to.equal(t.want);
    });
  }
});
