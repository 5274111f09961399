import { expect } from 'chai';
import { traceRequests } from '../../../src/cli/trace-workload.js';
import type { TraceEntry } from '../../../src/traffic-trace/trace-format.js';

const e = (atMs: number, blockIds: number[], inputTokens: number, outputTokens = 5): TraceEntry => ({
  atMs,
  blockIds,
  inputTokens,
  outputTokens,
  blockTokens: 8,
  model: '',
});

/** Length of the common prefix of two strings. */
const common = (a: string, b: string): number => {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
};

describe('cli: trace workload', () => {
  it('gives prompts that share exactly the blocks their id chains share', () => {
    const [a, b, c] = traceRequests([e(0, [0, 1, 2], 30), e(10, [0, 1, 3], 24), e(20, [4], 8)], { timeScale: 1 });
    // 4 characters per token, 8 tokens per block.
    expect(a!.prompt!.length).to.equal(30 * 4);
    expect(b!.prompt!.length).to.equal(24 * 4);
    const ab = common(a!.prompt!, b!.prompt!);
    expect(ab)
      .to.be.at.least(2 * 32)
      .and.below(3 * 32);
    expect(common(a!.prompt!, c!.prompt!)).to.be.below(32);
  });

  it('pads a prompt longer than its ids with text unique to it', () => {
    const [a, b] = traceRequests([e(0, [0], 20), e(1, [0], 20)], { timeScale: 1 });
    const n = common(a!.prompt!, b!.prompt!);
    expect(n).to.be.at.least(32).and.below(40);
  });

  it('scales arrivals, keeps at least one output token, and stops at maxRequests', () => {
    const got = traceRequests([e(0, [], 4, 0), e(100, [], 4), e(200, [], 4)], { timeScale: 0.5, maxRequests: 2 });
    expect(got.map((r) => [r.atMs, r.outputTokens])).to.deep.equal([
      [0, 1],
      [50, 5],
    ]);
    expect(() => traceRequests([], { timeScale: 0 })).to.throw(RangeError);
  });
});
