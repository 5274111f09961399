import { expect } from 'chai';
import { coreShare, processTree } from '../../../../bench/profile/engine-idle-cpu.js';

describe('bench/profile/engine-idle-cpu', () => {
  it('finds a process and all its descendants, not its siblings', () => {
    // 10 → 11 → 13, 10 → 12; 20 is another engine, 14 a child of it.
    const parentOf = new Map([
      [10, 1],
      [11, 10],
      [12, 10],
      [13, 11],
      [20, 1],
      [14, 20],
    ]);
    expect(processTree(10, parentOf).sort((a, b) => a - b)).to.deep.equal([10, 11, 12, 13]);
    expect(processTree(20, parentOf).sort((a, b) => a - b)).to.deep.equal([14, 20]);
    expect(processTree(99, parentOf)).to.deep.equal([99]);
  });

  it('turns two CPU samples into the share of one core per process, leaving out idle ones', () => {
    const before = new Map([
      ['engine0/VLLM::Worker', 10],
      ['engine0/vllm', 3],
      ['engine1/VLLM::Worker', 7],
    ]);
    const after = new Map([
      ['engine0/VLLM::Worker', 10.49],
      ['engine0/vllm', 3.05],
      ['engine1/VLLM::Worker', 7],
      ['engine1/vllm', 0.25],
    ]);
    expect(coreShare(before, after, 500)).to.deep.equal({ 'engine0/VLLM::Worker': 0.98, 'engine0/vllm': 0.1, 'engine1/vllm': 0.5 });
  });
});
