import { expect } from 'chai';
import { parseConfig } from '../../../src/config/parse-config.js';
import { DEFAULT_TRAFFIC_TRACE } from '../../../src/traffic-trace/trace-defaults.js';
import { MINIMAL, problemsOf } from './config-helpers.js';

describe('config: trafficTrace', () => {
  it('is off (no path) with its defaults when left out', () => {
    const c = parseConfig(MINIMAL);
    expect(c.trafficTrace.path).to.equal(undefined);
    expect(c.trafficTrace).to.deep.include(DEFAULT_TRAFFIC_TRACE);
  });

  it('takes a path and bounds', () => {
    const c = parseConfig({ ...MINIMAL, trafficTrace: { path: '/tmp/t.jsonl', sampleRate: 0.1, maxFiles: 2 } });
    expect(c.trafficTrace).to.deep.include({ path: '/tmp/t.jsonl', sampleRate: 0.1, maxFiles: 2 });
  });

  it('refuses bad values and unknown keys with field paths', () => {
    const problems = problemsOf(() =>
      parseConfig({ ...MINIMAL, trafficTrace: { path: '', sampleRate: 1.5, maxFiles: 0, blockTokns: 16 } }),
    ).join('\n');
    for (const field of ['trafficTrace.path', 'trafficTrace.sampleRate', 'trafficTrace.maxFiles', 'trafficTrace.blockTokns']) {
      expect(problems).to.contain(field);
    }
  });
});
