import { expect } from 'chai';
import fc from 'fast-check';
import { InflightTracker } from '../../../src/endpoints/inflight.js';

describe('InflightTracker', () => {
  it('counts requests and prompt tokens per endpoint and releases exactly once', () => {
    const t = new InflightTracker(3);
    const a = t.acquire(1, 100);
    const b = t.acquire(1, 50);
    t.acquire(2, 7);
    expect([t.requests(0), t.requests(1), t.requests(2)]).to.deep.equal([0, 2, 1]);
    expect(t.promptTokens(1)).to.equal(150);
    expect(a.release()).to.equal(true);
    expect(a.release()).to.equal(false);
    expect(a.released).to.equal(true);
    expect(t.requests(1)).to.equal(1);
    expect(t.promptTokens(1)).to.equal(50);
    b.release();
    expect(t.requests(1)).to.equal(0);
    expect(t.promptTokens(1)).to.equal(0);
    expect(t.totalRequests()).to.equal(1);
  });

  it('counts a request as prefilling until its first byte or its end, once', () => {
    const t = new InflightTracker(2);
    const a = t.acquire(0, 100);
    const b = t.acquire(0, 40);
    expect(t.prefillingRequests(0)).to.equal(2);
    expect(a.firstByte()).to.equal(true);
    expect(a.firstByte()).to.equal(false);
    expect(a.prefilling).to.equal(false);
    expect([t.prefillingRequests(0), t.requests(0)]).to.deep.equal([1, 2]);
    expect(b.release()).to.equal(true);
    expect(b.firstByte()).to.equal(false, 'no first byte after the end');
    expect(t.prefillingRequests(0)).to.equal(0);
    a.release();
    expect([t.requests(0), t.prefillingRequests(0)]).to.deep.equal([0, 0]);
  });

  it('returns to zero after any interleaving of acquires and (repeated) releases', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ e: fc.integer({ min: 0, max: 3 }), tokens: fc.double({ min: 0, max: 1e5, noNaN: true }) }), { maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 200 }),
        (acquires, releaseOrder) => {
          const t = new InflightTracker(4);
          const leases = acquires.map((a) => t.acquire(a.e, a.tokens));
          // Odd entries report a first byte, even ones release: any order, repeats included.
          for (const r of releaseOrder) {
            const l = leases[(r >> 1) % Math.max(1, leases.length)];
            if (r & 1) l?.firstByte();
            else l?.release();
          }
          for (let e = 0; e < 4; e++) {
            const open = leases.filter((l) => !l.released && l.endpointIndex === e);
            expect(t.prefillingRequests(e)).to.equal(open.filter((l) => l.prefilling).length);
          }
          for (const l of leases) l.release();
          for (let e = 0; e < 4; e++) {
            expect(t.requests(e)).to.equal(0);
            expect(t.promptTokens(e)).to.equal(0);
            expect(t.prefillingRequests(e)).to.equal(0);
          }
        },
      ),
      { numRuns: 100, seed: 9 },
    );
  });

  it('treats negative or non-finite token estimates as zero', () => {
    const t = new InflightTracker(1);
    t.acquire(0, -5);
    t.acquire(0, Number.NaN);
    t.acquire(0, Number.POSITIVE_INFINITY);
    expect(t.promptTokens(0)).to.equal(0);
    expect(t.requests(0)).to.equal(3);
  });

  it('grows without losing counts and rejects bad indexes', () => {
    const t = new InflightTracker(1);
    const l = t.acquire(0, 10);
    t.ensureEndpoints(5);
    expect(t.endpointCount).to.equal(5);
    expect(t.requests(0)).to.equal(1);
    l.release();
    expect(t.requests(0)).to.equal(0);
    expect(() => t.acquire(5, 1)).to.throw(RangeError);
    expect(() => t.requests(-1)).to.throw(RangeError);
  });
});
