import { expect } from 'chai';
import { PrefillLanes } from '../../../../src/plugins/shared/prefill-lanes.js';

describe('prefill lanes (the router-side prefill queue per engine)', () => {
  // 10 tokens per ms with no decode batch, 5 per ms once anything decodes.
  const lanes = (): PrefillLanes => new PrefillLanes((_id, batch) => (batch === 0 ? 10 : 5));

  it('drains queued work at the engine rate, first come first served, and moves requests into the batch', () => {
    const l = lanes();
    const a = l.add('e', 1000, 0);
    l.add('e', 500, 0);
    expect(l.ahead('e', 0)).to.equal(1500);
    expect(l.queued('e')).to.equal(2);
    expect(l.ahead('e', 50)).to.equal(1000); // 50 ms × 10 tokens/ms
    expect(l.decoding('e')).to.equal(0);
    expect(l.ahead('e', 100)).to.equal(500); // the first is done: it decodes, the rate halves
    expect(a.prefilled).to.equal(true);
    expect(l.decoding('e')).to.equal(1);
    expect(l.queued('e')).to.equal(1);
    expect(l.ahead('e', 150)).to.equal(250);
    expect(l.ahead('e', 1000)).to.equal(0);
    expect(l.decoding('e')).to.equal(2);
    // An idle lane banks no drain: new work starts from its own size.
    l.add('e', 300, 5000);
    expect(l.ahead('e', 5000)).to.equal(300);
    expect(l.ahead('x', 5000), 'an unknown engine').to.equal(0);
  });

  it('a first token or an end means everything up to that request is done', () => {
    const l = lanes();
    l.add('e', 1000, 0);
    const b = l.add('e', 1000, 0);
    const c = l.add('e', 1000, 0);
    l.firstToken('e', b);
    expect(l.ahead('e', 0)).to.equal(1000);
    expect(l.decoding('e')).to.equal(2);
    l.finish('e', b, 0);
    expect(l.decoding('e')).to.equal(1);
    l.finish('e', c, 0); // ended before it was seen prefilled (an abort, or the access log)
    expect(l.ahead('e', 0)).to.equal(0);
    expect(l.queued('e')).to.equal(0);
    expect(l.decoding('e')).to.equal(1);
    l.finish('e', c, 0); // twice: no change
    expect(l.decoding('e')).to.equal(1);
  });

  it("an engine's reported waiting requests are the router's newest ones not known to be past their first token", () => {
    const l = lanes();
    const a = l.add('e', 1000, 0);
    l.add('e', 400, 0);
    l.add('e', 200, 0);
    expect(l.ahead('e', 10_000), 'the drain estimate says all is done').to.equal(0);
    expect(l.waitingFloor('e', 0)).to.equal(0);
    expect(l.waitingFloor('e', 1)).to.equal(200);
    expect(l.waitingFloor('e', 2)).to.equal(600);
    expect(l.waitingFloor('e', 9), 'never more than the router sent').to.equal(1600);
    // The first one's end (access log): it and everything before it are past their first token.
    l.finish('e', a, 10_000);
    expect(l.waitingFloor('e', 9)).to.equal(600);
    expect(l.waitingFloor('x', 3), 'an unknown engine').to.equal(0);
  });

  it('reads a lane resolved once the same as by endpoint id (no lane reads as empty)', () => {
    const byId = lanes();
    const byLane = lanes();
    for (const l of [byId, byLane]) {
      l.add('e', 1000, 0);
      l.add('e', 500, 0);
      l.add('e', 200, 0);
    }
    const lane = byLane.lane('e');
    for (const t of [0, 40, 120, 200]) {
      expect(byLane.aheadOf(lane, t)).to.equal(byId.ahead('e', t));
      expect(byLane.decodingOf(lane)).to.equal(byId.decoding('e'));
      expect(byLane.queuedOf(lane)).to.equal(byId.queued('e'));
      expect(byLane.waitingFloorOf(lane, 2)).to.equal(byId.waitingFloor('e', 2));
    }
    const none = byLane.lane('x');
    expect(none).to.equal(undefined);
    expect([byLane.aheadOf(none, 0), byLane.decodingOf(none), byLane.queuedOf(none), byLane.waitingFloorOf(none, 3)]).to.deep.equal([
      0, 0, 0, 0,
    ]);
  });

  it('forgets departed engines', () => {
    const l = lanes();
    l.add('a', 100, 0);
    l.add('b', 100, 0);
    l.retain(new Set(['b']));
    expect(l.engines()).to.deep.equal(['b']);
    expect(l.ahead('a', 0)).to.equal(0);
  });
});
