import { expect } from 'chai';
import { realisticPreset } from '../../../../bench/bars/run-bars.js';
import { expandPreset } from '../../../../bench/presets/expand.js';

describe('bench/bars realistic preset', () => {
  const builds = {
    current: { dir: '/x/current', commit: 'c'.repeat(40), dirty: false },
    baseline: { dir: '/x/baseline', commit: 'b'.repeat(40), dirty: false },
  };

  it("runs both routers at the one rate in ABBA order, each from its own build, responses through the router in both; this build's access-log path beside them", () => {
    const runs = expandPreset(realisticPreset(builds, 8, 2));
    expect(runs.map((e) => e.contender.label)).to.deep.equal([
      'current-1',
      'baseline-1',
      'current-access-log-1',
      'baseline-2',
      'current-2',
      'current-access-log-2',
    ]);
    expect(runs.map((e) => e.qps)).to.deep.equal([8, 8, 8, 8, 8, 8]);
    for (const e of runs) {
      expect(e.contender.kind).to.equal('cacheroute');
      const c = e.contender as { routerMain?: string; responsePath?: string; routerPredatesResponseCompletion?: boolean };
      expect(c.routerMain).to.equal(`/x/${e.contender.label.split('-')[0]}/dist/src/main.js`);
      expect(c.responsePath).to.equal(e.contender.label.startsWith('current-access-log') ? 'access-log' : 'ext-proc');
      expect(c.routerPredatesResponseCompletion === true).to.equal(e.contender.label.startsWith('baseline'));
    }
  });

  it('keeps the peers workload shape (same scenario for every contender)', () => {
    const runs = expandPreset(realisticPreset(builds, 4, 1));
    expect(runs).to.have.length(3);
    expect(runs[0]!.scenario).to.deep.equal(runs[1]!.scenario);
    expect(runs[0]!.scenario.kind).to.equal('shared-prefix');
  });
});
