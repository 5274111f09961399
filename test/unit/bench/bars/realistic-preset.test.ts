import { expect } from 'chai';
import { realisticPreset, realisticSideOf } from '../../../../bench/bars/run-bars.js';
import { expandPreset } from '../../../../bench/presets/expand.js';

describe('bench/bars realistic preset', () => {
  const builds = {
    current: { dir: '/x/current', commit: 'c'.repeat(40), dirty: false, responseCompletion: true },
    baseline: { dir: '/x/baseline', commit: 'b'.repeat(40), dirty: false, responseCompletion: true },
  };
  type Cacheroute = { routerMain?: string; responsePath?: string; routerPredatesResponseCompletion?: boolean };

  it('runs both routers at the one rate in ABBA order, each from its own build, responses through the router in both; each build on its access-log path beside them', () => {
    const runs = expandPreset(realisticPreset(builds, 8, 2));
    expect(runs.map((e) => e.contender.label)).to.deep.equal([
      'current-1',
      'baseline-1',
      'current-access-log-1',
      'baseline-access-log-1',
      'baseline-2',
      'current-2',
      'baseline-access-log-2',
      'current-access-log-2',
    ]);
    expect(runs.map((e) => e.qps)).to.deep.equal([8, 8, 8, 8, 8, 8, 8, 8]);
    for (const e of runs) {
      expect(e.contender.kind).to.equal('cacheroute');
      const c = e.contender as Cacheroute;
      expect(c.routerMain).to.equal(`/x/${e.contender.label.split('-')[0]}/dist/src/main.js`);
      expect(c.responsePath).to.equal(e.contender.label.includes('-access-log-') ? 'access-log' : 'ext-proc');
      // Both builds know server.responseCompletion, so both are told (a baseline left on its
      // default access-log path would close every stream after the request side).
      expect(c.routerPredatesResponseCompletion).to.equal(undefined);
    }
  });

  it('a baseline that predates server.responseCompletion is not given the key and has no access-log run', () => {
    const old = { ...builds, baseline: { ...builds.baseline, responseCompletion: false } };
    const runs = expandPreset(realisticPreset(old, 8, 1));
    expect(runs.map((e) => e.contender.label)).to.deep.equal(['current-1', 'baseline-1', 'current-access-log-1']);
    const flags = runs.map((e) => (e.contender as Cacheroute).routerPredatesResponseCompletion === true);
    expect(flags).to.deep.equal([false, true, false]);
  });

  it('names the side of every label', () => {
    expect(['current-2', 'baseline-1', 'current-access-log-1', 'baseline-access-log-3'].map(realisticSideOf)).to.deep.equal([
      'current',
      'baseline',
      'current-access-log',
      'baseline-access-log',
    ]);
  });

  it('keeps the peers workload shape (same scenario for every contender)', () => {
    const runs = expandPreset(realisticPreset(builds, 4, 1));
    expect(runs).to.have.length(4);
    expect(runs[0]!.scenario).to.deep.equal(runs[1]!.scenario);
    expect(runs[0]!.scenario.kind).to.equal('shared-prefix');
  });
});
