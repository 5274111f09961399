import { expect } from 'chai';
import { SessionAffinityScorer } from '../../../../src/plugins/scorer/session-affinity.js';
import type { SessionAffinityOptions } from '../../../../src/plugins/scorer/session-affinity.js';
import { loadedCandidates, decision, endpoint, chatRequest, state } from '../../builders.js';

const OPTS: SessionAffinityOptions = {
  ttlMs: 1000,
  maxSessions: 3,
  unit: 'requests',
  overloadAbs: 4,
  overloadRel: 1.5,
  maxMetricsAgeMs: 1000,
  tokensPerRequest: 1000,
};

function bind(s: SessionAffinityScorer, key: string, ep: number, nowMs: number): void {
  const st = state(chatRequest({ sessionKey: key }), nowMs);
  s.onRouted(st, decision(st.request, endpoint(ep)));
}

describe('load/session-affinity scorer', () => {
  it('is neutral (all 0) without a key or binding', () => {
    const s = new SessionAffinityScorer('session', OPTS);
    expect([...s.score(state(chatRequest()), loadedCandidates([0, 0]))]).to.deep.equal([0, 0]);
    expect([...s.score(state(chatRequest({ sessionKey: 'k' })), loadedCandidates([0, 0]))]).to.deep.equal([0, 0]);
  });

  it('scores the bound engine 1 and hints the session reason', () => {
    const s = new SessionAffinityScorer('session', OPTS);
    bind(s, 'k', 2, 0);
    const st = state(chatRequest({ sessionKey: 'k' }), 10);
    expect([...s.score(st, loadedCandidates([0, 0, 3]))]).to.deep.equal([0, 0, 1]);
    expect(st.reasonHint).to.equal('session');
  });

  it('yields when the sticky engine is overloaded by both the absolute and relative rule', () => {
    const s = new SessionAffinityScorer('session', OPTS);
    bind(s, 'k', 0, 0);
    expect([...s.score(state(chatRequest({ sessionKey: 'k' })), loadedCandidates([5, 2]))]).to.deep.equal([1, 0], 'abs diff 3 <= 4');
    expect([...s.score(state(chatRequest({ sessionKey: 'k' })), loadedCandidates([20, 15]))]).to.deep.equal([1, 0], '20 < 1.5 x 15');
    const st = state(chatRequest({ sessionKey: 'k' }));
    expect([...s.score(st, loadedCandidates([9, 2]))]).to.deep.equal([0, 0]);
    expect(st.notes).to.include('session yielded to load');
    bind(s, 'k', 1, 1); // routed elsewhere → session moves
    expect(s.boundTo('k')).to.equal('10.0.0.2:8000');
    expect(s.stats().yielded).to.equal(1);
  });

  it('expires idle sessions (sliding TTL) and keeps at most maxSessions', () => {
    const s = new SessionAffinityScorer('session', OPTS);
    bind(s, 'k', 1, 0);
    bind(s, 'k', 1, 900); // refreshed
    expect([...s.score(state(chatRequest({ sessionKey: 'k' }), 1800), loadedCandidates([0, 0]))]).to.deep.equal([0, 1]);
    expect([...s.score(state(chatRequest({ sessionKey: 'k' }), 1901), loadedCandidates([0, 0]))]).to.deep.equal([0, 0]);
    expect(s.stats().expired).to.equal(1);
    for (const k of ['a', 'b', 'c', 'd']) bind(s, k, 0, 2000);
    expect(s.stats().sessions).to.equal(3);
    expect(s.boundTo('a')).to.equal(undefined);
  });
});
