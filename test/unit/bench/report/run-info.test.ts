import { expect } from 'chai';
import { dirtyPaths } from '../../../../bench/report/run-info.js';

describe('bench/report/run-info dirtyPaths', () => {
  it('keeps whole paths whether or not the first status column was trimmed away', () => {
    expect(dirtyPaths('M bench/cli.ts\n M src/a.ts\n?? bench/new.ts\nMM src/b.ts\n M bench/results/peers/run.json\n')).to.deep.equal([
      'bench/cli.ts',
      'src/a.ts',
      'bench/new.ts',
      'src/b.ts',
    ]);
  });
});
