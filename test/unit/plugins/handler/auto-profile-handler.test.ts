import { expect } from 'chai';
import type { SignalView } from '../../../../src/framework/signal-view.js';
import { NO_SIGNALS } from '../../../../src/framework/signal-view.js';
import type { TrafficSnapshot } from '../../../../src/framework/signal-view.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { AutoModeSelector, DEFAULT_AUTO_MODE } from '../../../../src/plugins/handler/auto-mode.js';
import { AutoProfileHandler, autoProfileHandler } from '../../../../src/plugins/handler/auto-profile-handler.js';
import type { Profile } from '../../../../src/framework/types.js';
import { cycle } from '../../builders.js';

const profile = (name: string): Profile => ({
  name,
  filters: [],
  scorers: [],
  placements: [],
  picker: { name: 'p', pick: () => ({ order: [0], reason: 'load' }) },
});
const PROFILES = new Map(['learning', 'load', 'affinity', 'cache-aware'].map((n) => [n, profile(n)]));
const NAMES = { learning: 'learning', load: 'load', affinity: 'affinity', 'cache-aware': 'cache-aware' } as const;

function traffic(sharedRate: number, requests = 100): TrafficSnapshot {
  return { windowMs: 60_000, requests, reuseRate: sharedRate, sharedRate, hottestPrefixShare: 0.1, distinctPrefixes: 10, endpoints: [] };
}

describe('auto-profile-handler', () => {
  it('starts in learning, follows the traffic statistics to the affinity or cache-aware profile, notes the mode', () => {
    let t = traffic(0);
    let reads = 0;
    const signals: SignalView = { ...NO_SIGNALS, traffic: () => (reads++, t) };
    const engines = { size: 8, all: () => [], byId: () => undefined, hasModelRestrictions: false };
    const h = new AutoProfileHandler('auto', new AutoModeSelector(DEFAULT_AUTO_MODE, silentLogger), NAMES, signals, engines, 1000);
    const st = cycle();
    expect(h.pickProfile(st, PROFILES).name).to.equal('learning', 'low reuse is believed only after minDwellMs');
    expect(st.notes).to.include('auto: learning');
    t = traffic(0.9);
    const later = { ...cycle(), nowMs: 5000 };
    expect(h.pickProfile(later, PROFILES).name).to.equal('cache-aware', '8 engines > fewEngines 4');
    expect(h.pickProfile({ ...cycle(), nowMs: 5500 }, PROFILES).name).to.equal('cache-aware');
    expect(reads, 'evaluated at most once per evaluateIntervalMs').to.equal(2);
    expect(h.debugState()).to.deep.include({ mode: 'cache-aware' });
    expect(h.requiredProfiles).to.have.members(['learning', 'load', 'affinity', 'cache-aware']);
  });

  it('rejects lowReuse above highReuse and unknown parameters, naming the field', () => {
    const r = autoProfileHandler.parameters.safeParse({ lowReuse: 0.8, highReuse: 0.4 });
    expect(r.success).to.equal(false);
    expect(JSON.stringify(r.error?.issues)).to.contain('lowReuse');
    expect(autoProfileHandler.parameters.safeParse({ profiles: { learnin: 'x' } }).success).to.equal(false);
    expect(autoProfileHandler.parameters.parse({}).profiles).to.deep.equal(NAMES);
  });
});
