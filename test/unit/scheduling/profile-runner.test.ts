import { expect } from 'chai';
import { isRouterError } from '../../../src/core/errors.js';
import { runProfile } from '../../../src/scheduling/profile-runner.js';
import type { Candidate, CycleState, Filter, Picker, Placement, Profile, Scorer } from '../../../src/framework/types.js';
import { candidates, cycle } from '../builders.js';

function filter(name: string, keep: (c: Candidate) => boolean, calls: string[] = []): Filter {
  return { name, filter: (_s, cs) => (calls.push(name), cs.filter(keep)) };
}
function scorer(name: string, values: number[]): Scorer {
  return { name, score: () => values };
}
const firstPicker: Picker = {
  name: 'first',
  pick: (_s, cs, totals) => ({ order: cs.map((_, i) => i).sort((a, b) => totals[b]! - totals[a]!), reason: 'load' }),
};

function profile(p: Partial<Profile>): Profile {
  return { name: 'test', filters: [], scorers: [], placements: [], picker: firstPicker, ...p };
}

function noEndpoint(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isRouterError(e, 'NO_ENDPOINT')) return e.message;
    throw e;
  }
  throw new Error('expected NO_ENDPOINT');
}

describe('runProfile', () => {
  it('runs filters in order and stops at the first that leaves nothing', () => {
    const calls: string[] = [];
    const p = profile({
      filters: [
        filter('odd', (c) => c.endpoint.index % 2 === 1, calls),
        filter('none', () => false, calls),
        filter('never', () => true, calls),
      ],
    });
    expect(noEndpoint(() => runProfile(p, cycle(), candidates(4)))).to.match(/after filter "none"/);
    expect(calls).to.deep.equal(['odd', 'none']);
  });

  it('fails with NO_ENDPOINT when there are no candidates at all', () => {
    expect(noEndpoint(() => runProfile(profile({}), cycle(), []))).to.match(/no endpoints/);
  });

  it('clamps raw scores to [0,1] (NaN and missing as 0), weights and sums them', () => {
    const p = profile({
      scorers: [
        { scorer: scorer('a', [2, -1, Number.NaN, 0.5]), weight: 2 },
        { scorer: scorer('b', [0.25, 1]), weight: 4 },
      ],
    });
    const run = runProfile(p, cycle(), candidates(4));
    expect(run.scores).to.deep.equal([
      [1, 0, 0, 0.5],
      [0.25, 1, 0, 0],
    ]);
    expect(run.totals).to.deep.equal([3, 4, 0, 1]);
    expect(run.order).to.deep.equal([1, 0, 3, 2]);
  });

  it("keeps a scorer's own array when every score is in range, and a clamped copy otherwise", () => {
    const inRange = [0, 0.5, 1, -0];
    const outOfRange = [0, 0.5, 1.5, 0.25];
    const p = profile({
      scorers: [
        { scorer: { name: 'in', score: () => inRange }, weight: 1 },
        { scorer: { name: 'out', score: () => outOfRange }, weight: 1 },
      ],
    });
    const run = runProfile(p, cycle(), candidates(4));
    expect(run.scores[0]).to.equal(inRange);
    expect(run.scores[1]).to.not.equal(outOfRange);
    expect(run.scores[1]).to.deep.equal([0, 0.5, 1, 0.25]);
    expect(outOfRange).to.deep.equal([0, 0.5, 1.5, 0.25]);
    expect(run.totals).to.deep.equal([0, 1, 2, 0.25]);
  });

  it('passes only the surviving candidates to scorers and picker', () => {
    const seen: number[][] = [];
    const spy: Scorer = { name: 'spy', score: (_s: CycleState, cs) => (seen.push(cs.map((c) => c.endpoint.index)), cs.map(() => 1)) };
    const p = profile({ filters: [filter('gt0', (c) => c.endpoint.index > 0)], scorers: [{ scorer: spy, weight: 1 }] });
    const run = runProfile(p, cycle(), candidates(3));
    expect(seen).to.deep.equal([[1, 2]]);
    expect(run.candidates.map((c) => c.endpoint.index)).to.deep.equal([1, 2]);
  });

  it('drops invalid and duplicate positions from the picker, and fails if none is valid', () => {
    const sloppy: Picker = { name: 'sloppy', pick: () => ({ order: [7, 1, 1, -1, 0.5, 0], reason: 'random' }) };
    expect(runProfile(profile({ picker: sloppy }), cycle(), candidates(3)).order).to.deep.equal([1, 0]);
    const empty: Picker = { name: 'empty', pick: () => ({ order: [9], reason: 'random' }) };
    let err: unknown;
    try {
      runProfile(profile({ picker: empty }), cycle(), candidates(3));
    } catch (e) {
      err = e;
    }
    expect(isRouterError(err, 'INTERNAL')).to.equal(true);
  });

  it('times every plugin call with the given timer', () => {
    let t = 0;
    const timer = (): number => (t += 5);
    const p = profile({ filters: [filter('f', () => true)], scorers: [{ scorer: scorer('s', [1, 1]), weight: 1 }] });
    const run = runProfile(p, cycle(), candidates(2), timer);
    expect(run.timings.map((x) => x.plugin)).to.deep.equal(['f', 's', 'first']);
    for (const x of run.timings) expect(x.micros).to.equal(5);
    expect(runProfile(p, cycle(), candidates(2)).timings).to.deep.equal([]);
  });

  it('lets the first placement that answers order the candidates, and the picker order the rest', () => {
    const calls: string[] = [];
    const never: Placement = { name: 'never', place: () => (calls.push('never'), undefined) };
    const cold: Placement = {
      name: 'cold',
      place: (st) => (calls.push('cold'), st.request.prefix === '' ? { order: [1, 0], reason: 'cold' } : undefined),
    };
    const later: Placement = { name: 'later', place: () => (calls.push('later'), { order: [0, 1], reason: 'load' }) };
    const p = profile({ scorers: [{ scorer: scorer('s', [1, 0]), weight: 1 }], placements: [never, cold, later] });
    const placed = runProfile(p, cycle(), candidates(2));
    expect(placed.order).to.deep.equal([1, 0]);
    expect(placed.reason).to.equal('cold');
    expect(calls).to.deep.equal(['never', 'cold'], 'stops at the first answer');
    const q = profile({ scorers: [{ scorer: scorer('s', [0, 1]), weight: 1 }], placements: [never] });
    expect(runProfile(q, cycle({ prefix: 'x' }), candidates(2)).order).to.deep.equal([1, 0], 'no answer: the picker orders by totals');
  });
});
