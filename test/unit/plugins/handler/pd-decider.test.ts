/**
 * The disaggregation decider's rule and its per-engine prefill queues: the floors, the
 * relative saturation rule (the prefill pick's queued prefill + its part against the decode
 * engine's), the absolute bound, and the queues draining at the configured rate and moving
 * forward on first bytes and ends.
 */
import { expect } from 'chai';
import type { Endpoint, RouteDecision } from '../../../../src/core/types.js';
import {
  beforePrefillPick,
  needsPrefill,
  PrefillQueueLedger,
  prefillSaturated,
  type DeciderParams,
} from '../../../../src/plugins/handler/pd-decider.js';

const P: DeciderParams = {
  split: 'auto',
  minUncachedTokens: 256,
  minPromptTokens: 512,
  maxPrefillPendingTokens: 10_000,
  prefillTokensPerSecond: 1000,
};

function endpoint(id: string, index: number): Endpoint {
  return { id, index, address: '127.0.0.1', port: 8000 + index, pool: 'default', models: [] } as unknown as Endpoint;
}
const D = endpoint('d', 0);
const F = endpoint('p', 1);

/** A decision as the handler makes it: on decode engine D, prefill split onto F when `split`. */
function decision(promptTokens: number, uncachedTokens: number, split: boolean, prefillCachedTokens = 0): RouteDecision {
  return {
    endpoint: D,
    fallbacks: [],
    disagg: split
      ? { why: 'split', prefill: F, promptTokens, uncachedTokens, prefillCachedTokens }
      : { why: 'prefill-saturated', promptTokens, uncachedTokens },
  } as unknown as RouteDecision;
}

describe('pd-decider', () => {
  it('floors: short prompts and prompts the decode engine mostly holds are not split; always/never ignore them', () => {
    expect(beforePrefillPick(P, 511, 511)).to.equal('short-prompt');
    expect(beforePrefillPick(P, 512, 255)).to.equal('cached');
    expect(beforePrefillPick(P, 512, 256)).to.equal(undefined);
    expect(beforePrefillPick({ ...P, split: 'never' }, 5000, 5000)).to.equal('never');
    expect(beforePrefillPick({ ...P, split: 'always' }, 1, 0)).to.equal(undefined);
    expect(needsPrefill(P, 512, 256)).to.equal(true);
    expect(needsPrefill(P, 512, 255)).to.equal(false);
  });

  it('saturated when the prefill pick would finish the prompt later than the decode engine would start and finish it', () => {
    const idle = { prefillAhead: 0, prefillUncached: 4000, decodeAhead: 0, decodeUncached: 4000 };
    expect(prefillSaturated(P, idle), 'equal queues: split (takes work off the decode engine)').to.equal(false);
    expect(prefillSaturated(P, { ...idle, prefillAhead: 1 })).to.equal(true);
    expect(prefillSaturated(P, { ...idle, prefillAhead: 3000, decodeAhead: 3000 })).to.equal(false);
    // A prefill engine holding part of the prompt computes less of it.
    expect(prefillSaturated(P, { ...idle, prefillAhead: 1500, prefillUncached: 2500 })).to.equal(false);
    expect(prefillSaturated(P, { ...idle, prefillAhead: 1501, prefillUncached: 2500 })).to.equal(true);
  });

  it('the absolute bound saturates whatever the decode engine has queued; neither rule applies outside auto', () => {
    const q = { prefillAhead: 10_000, prefillUncached: 1000, decodeAhead: 50_000, decodeUncached: 4000 };
    expect(prefillSaturated(P, q)).to.equal(true);
    expect(prefillSaturated(P, { ...q, prefillAhead: 9999 })).to.equal(false);
    expect(prefillSaturated({ ...P, split: 'always' }, { ...q, prefillAhead: 1e9 })).to.equal(false);
  });

  it('queues: a request joins the engine that computes it (the prefill engine when split), minus what that engine holds', () => {
    const l = new PrefillQueueLedger(1000);
    l.routed('a', decision(3000, 3000, true, 1000), 0);
    l.routed('b', decision(2000, 1500, false), 0);
    l.routed('b', decision(2000, 1500, false), 0); // the same id again counts once
    expect(l.ahead('p', 0)).to.equal(2000);
    expect(l.ahead('d', 0)).to.equal(1500);
    expect(l.size).to.equal(2);
  });

  it('queues drain at prefillTokensPerSecond and are moved forward by first bytes and ends', () => {
    const l = new PrefillQueueLedger(1000); // 1 token per ms
    l.routed('a', decision(3000, 3000, true), 0);
    l.routed('b', decision(3000, 3000, true), 0);
    expect(l.ahead('p', 500)).to.equal(5500);
    expect(l.ahead('p', 2000)).to.equal(4000);
    // The engine was faster than the rate: b's first byte means a and b are both done.
    l.firstByte('b');
    expect(l.ahead('p', 2000)).to.equal(0);
    l.routed('c', decision(1000, 1000, true), 2000);
    l.completed('c', 2100);
    expect(l.ahead('p', 2100)).to.equal(0);
    l.completed('a', 2100);
    l.completed('b', 2100);
    expect(l.size).to.equal(0);
    // A request with no disagg part (another handler's decision) is not tracked.
    l.routed('x', { endpoint: D, fallbacks: [] } as unknown as RouteDecision, 0);
    expect(l.size).to.equal(0);
  });

  it('queues of engines that left are forgotten', () => {
    const l = new PrefillQueueLedger(1000);
    l.routed('a', decision(3000, 3000, true), 0);
    l.routed('b', decision(2000, 2000, false), 0);
    l.retain([D]);
    expect(l.ahead('p', 0)).to.equal(0);
    expect(l.ahead('d', 0)).to.equal(2000);
    expect(l.size).to.equal(1);
  });
});
