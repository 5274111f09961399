import { expect } from 'chai';
import { parseConfig } from '../../../../src/config/parse-config.js';
import { cacheAwareSchema, loadSchema } from '../../../../src/plugins/presets/shorthand.js';
import { isRouterError } from '../../../../src/core/errors.js';

const MINIMAL = { apiVersion: 'cacheroute/v1', endpoints: [{ address: '127.0.0.1:8001' }] };

function problems(load: unknown): string {
  try {
    parseConfig({ ...MINIMAL, load });
  } catch (err) {
    expect(isRouterError(err, 'BAD_CONFIG')).to.equal(true);
    return (err as Error).message;
  }
  throw new Error('expected a BAD_CONFIG error');
}

const DEFAULT_LOAD_CONFIG = loadSchema.parse(undefined);

describe('shorthand sections (load, cacheAware)', () => {
  it('fills the whole load section from the named defaults', () => {
    const c = parseConfig(MINIMAL);
    expect(c.load).to.deep.equal(DEFAULT_LOAD_CONFIG);
    expect(DEFAULT_LOAD_CONFIG.hotspot.enabled).to.equal(false);
    expect(c.cacheAware).to.deep.equal(cacheAwareSchema.parse({}));
    expect(c.engineMetrics.maxConcurrency).to.equal(16);
    expect(c.engineMetrics.frozenAfterCompletions).to.equal(3);
    expect(c.engineMetrics.unobservedHalfLifeMs).to.equal(1000);
  });

  it("cacheAware.preciseIndex swaps cache-aware's affinity scorer for precise-prefix-cache under the same name, without index-calibration", () => {
    const plain = parseConfig(MINIMAL);
    expect(plain.plugins.map((p) => p.type)).to.include.members(['prefix-cache', 'index-calibration']);
    const c = parseConfig({ ...MINIMAL, cacheAware: { blockChars: 32, preciseIndex: { mode: 'approximate', maxBlocks: 64 } } });
    const affinity = c.plugins.find((p) => (p.name ?? p.type) === 'prefix-cache');
    expect(affinity?.type).to.equal('precise-prefix-cache');
    expect(affinity?.parameters).to.include({ blockChars: 32, mode: 'approximate', maxBlocks: 64 });
    expect(c.plugins.map((p) => p.type)).to.not.include('index-calibration');
    expect(c.plugins.map((p) => p.type)).to.not.include('prefix-cache');
  });

  it("cacheAware.preciseIndex parameters are checked by the plugin's schema", () => {
    let msg = '';
    try {
      parseConfig({ ...MINIMAL, cacheAware: { preciseIndex: { mode: 'precise' } } });
    } catch (err) {
      msg = (err as Error).message;
    }
    expect(msg).to.match(/parameters\.models: needs at least one model in mode precise/);
  });

  it('a document with an empty section gets the defaults too', () => {
    expect(parseConfig({ ...MINIMAL, load: {}, cacheAware: {} }).load).to.deep.equal(DEFAULT_LOAD_CONFIG);
  });

  it('accepts overrides', () => {
    const c = parseConfig({
      ...MINIMAL,
      load: {
        unit: 'tokens',
        tokensPerRequest: 2048,
        hotspot: { enabled: true, highWater: 10, lowWater: 3 },
        boundedLoad: { epsilon: 0.5 },
        session: { ttlMs: 1000 },
        auto: { fewEngines: 2, initial: 'load', learningMinMatch: 0.5 },
      },
    });
    expect(c.load).to.deep.include({ unit: 'tokens', tokensPerRequest: 2048 });
    expect(c.load?.hotspot).to.include({ highWater: 10, lowWater: 3, enabled: true });
    expect(c.load?.boundedLoad.epsilon).to.equal(0.5);
    expect(c.load?.session.ttlMs).to.equal(1000);
    expect(c.load?.auto).to.include({ fewEngines: 2, initial: 'load', learningMinMatch: 0.5 });
  });

  it('reports every problem with its field path', () => {
    const msg = problems({
      unit: 'bytes',
      tokensPerRequest: 0,
      hotspot: { highWater: 2, lowWater: 2, typo: 1 },
      boundedLoad: { epsilon: -1 },
      session: { overloadRel: 0.5 },
      calibration: { toleranceBlocks: 1.5 },
      auto: { lowReuse: 0.8, highReuse: 0.4, learningMinMatch: 0, initial: 'guess' },
    });
    for (const path of [
      'load.unit',
      'load.tokensPerRequest',
      'load.hotspot.lowWater',
      'load.hotspot.typo',
      'load.boundedLoad.epsilon',
      'load.session.overloadRel',
      'load.calibration.toleranceBlocks',
      'load.auto.lowReuse',
      'load.auto.learningMinMatch',
      'load.auto.initial',
    ]) {
      expect(msg).to.contain(path);
    }
  });

  it('validates the new engineMetrics fields', () => {
    expect(() => parseConfig({ ...MINIMAL, engineMetrics: { maxConcurrency: 0 } })).to.throw(/engineMetrics\.maxConcurrency/);
    expect(() => parseConfig({ ...MINIMAL, engineMetrics: { frozenAfterCompletions: 0 } })).to.throw(
      /engineMetrics\.frozenAfterCompletions/,
    );
  });
});
