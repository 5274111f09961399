/** `load.hotspot` group-level trigger knobs: defaults, overrides, field-path errors. */
import { expect } from 'chai';
import { parseConfig } from '../../../../src/config/parse-config.js';
import {
  DEFAULT_HOTSPOT_ENABLED,
  DEFAULT_HOTSPOT_MIN_GROUP_SHARE,
  DEFAULT_HOTSPOT_MIN_LOAD_RATIO,
  DEFAULT_HOTSPOT_SHARE_HALF_LIFE_MS,
} from '../../../../src/plugins/presets/shorthand.js';
import { MINIMAL, problemsOf } from '../../config/config-helpers.js';

describe('config: load.hotspot group-level trigger', () => {
  it('fills the gates from their named defaults and keeps replication off', () => {
    const h = parseConfig(MINIMAL).load!.hotspot;
    expect(h).to.include({
      enabled: DEFAULT_HOTSPOT_ENABLED,
      minGroupShare: DEFAULT_HOTSPOT_MIN_GROUP_SHARE,
      minLoadRatio: DEFAULT_HOTSPOT_MIN_LOAD_RATIO,
      shareHalfLifeMs: DEFAULT_HOTSPOT_SHARE_HALF_LIFE_MS,
    });
    expect(h.enabled).to.equal(false);
    expect(parseConfig({ ...MINIMAL, load: { hotspot: { enabled: true } } }).load!.hotspot.enabled).to.equal(true);
    expect(h.minGroupShare).to.be.greaterThan(0);
    expect(h.minLoadRatio).to.be.greaterThan(1);
  });

  it('accepts overrides, 0 turning a gate off', () => {
    const h = parseConfig({ ...MINIMAL, load: { hotspot: { enabled: true, minGroupShare: 0, minLoadRatio: 2, shareHalfLifeMs: 1000 } } })
      .load!.hotspot;
    expect(h).to.include({ enabled: true, minGroupShare: 0, minLoadRatio: 2, shareHalfLifeMs: 1000 });
  });

  it('reports each bad gate with its field path', () => {
    const lines = problemsOf(() =>
      parseConfig({ ...MINIMAL, load: { hotspot: { minGroupShare: 1.5, minLoadRatio: -1, shareHalfLifeMs: 0 } } }),
    );
    for (const path of ['load.hotspot.minGroupShare', 'load.hotspot.minLoadRatio', 'load.hotspot.shareHalfLifeMs']) {
      expect(
        lines.some((l) => l.startsWith(path)),
        `${path} in ${lines.join(' | ')}`,
      ).to.equal(true);
    }
    expect(problemsOf(() => parseConfig({ ...MINIMAL, load: { hotspot: { minGroupShare: 'half' } } })).join()).to.contain(
      'load.hotspot.minGroupShare',
    );
  });
});
