import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_EXPLAIN_CANDIDATES, RecentDecisions } from '../../../src/telemetry/recent-decisions.js';
import type { CandidateScore } from '../../../src/core/types.js';
import {
  scoredCandidate as candidate,
  sampleDecision as decision,
  loopbackEndpoint as endpoint,
  secretRequest as request,
} from '../builders.js';

describe('recent-decisions', () => {
  it('keeps the newest records up to capacity, newest first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 30 }), (cap, pushes, n) => {
        const r = new RecentDecisions(cap, () => 0);
        for (let i = 0; i < pushes; i++) r.record(request({ requestId: `q${i}` }), decision({ requestId: `q${i}` }));
        const got = r.latest(n).map((d) => d.requestId);
        const expected: string[] = [];
        for (let i = pushes - 1; i >= Math.max(0, pushes - cap) && expected.length < n; i--) expected.push(`q${i}`);
        expect(got).to.deep.equal(expected);
        expect(r.length).to.equal(Math.min(cap, pushes));
      }),
      { seed: 3, numRuns: 200 },
    );
  });

  it('attaches outcomes only while the record is kept', () => {
    const r = new RecentDecisions(2, () => 0);
    r.record(request({ requestId: 'a' }), decision({ requestId: 'a' }));
    r.record(request({ requestId: 'b' }), decision({ requestId: 'b' }));
    r.recordOutcome('a', { status: 200, aborted: false, cachedTokens: 64 });
    r.record(request({ requestId: 'c' }), decision({ requestId: 'c' })); // evicts a
    r.recordOutcome('a', { status: 500, aborted: false });
    r.recordOutcome('c', { aborted: true });
    const [c, b] = r.latest();
    expect(c!.outcome).to.deep.equal({ aborted: true });
    expect(b!.outcome).to.equal(undefined);
  });

  it('keeps no prompt text, bounded candidates, trace id and time', () => {
    const r = new RecentDecisions(4, () => Date.UTC(2026, 0, 2, 3, 4, 5));
    const many: CandidateScore[] = Array.from({ length: 40 }, (_, i) => candidate(endpoint(i), i / 40, 0.5));
    r.record(
      request({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
      decision({ candidates: many, endpoint: endpoint(0) }),
    );
    const [rec] = r.latest(1);
    expect(rec!.candidates).to.have.length(MAX_EXPLAIN_CANDIDATES);
    expect(rec!.candidateCount).to.equal(40);
    expect(rec!.traceId).to.equal('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(rec!.time).to.equal('2026-01-02T03:04:05.000Z');
    expect(JSON.stringify(rec)).to.not.include('hunter2');
  });

  it('a zero-capacity ring keeps nothing', () => {
    const r = new RecentDecisions(0);
    r.record(request(), decision());
    expect(r.latest(5)).to.deep.equal([]);
  });
});
