/**
 * The cache-aware preset through its old-shape shorthand (`strategy: cache-aware`) and as
 * the explicit plugin graph of examples/router-plugins.yaml: identical decisions on the
 * seeded trace, and both identical to the decisions pinned before the refactor.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { parseConfig } from '../../../../src/config/parse-config.js';
import { REPO_ROOT } from '../../../kit/repo-paths.js';
import { caseConfig, PRESET_CASES } from './preset-cases.js';
import { DEFAULT_TRACE, traceDecisions } from './decision-trace.js';

const PINNED = JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'decisions', 'presets.json'), 'utf8')) as Record<
  string,
  string[]
>;

describe('explicit plugin graph vs strategy shorthand', () => {
  const shorthand = caseConfig(PRESET_CASES.find((c) => c.name === 'cache-aware')!);

  function explicit(): ReturnType<typeof parseConfig> {
    const doc = parse(readFileSync(join(REPO_ROOT, 'examples', 'router-plugins.yaml'), 'utf8')) as Record<string, unknown>;
    expect(doc['strategy'], 'the example states the graph, not the shorthand').to.equal(undefined);
    return parseConfig({
      ...doc,
      endpoints: shorthand.endpoints,
      engineMetrics: { enabled: false },
      server: { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0' },
    });
  }

  it('examples/router-plugins.yaml routes exactly like strategy: cache-aware', () => {
    const a = traceDecisions(shorthand, DEFAULT_TRACE);
    const b = traceDecisions(explicit(), DEFAULT_TRACE);
    const first = a.findIndex((d, i) => d !== b[i]);
    expect(first, `first difference at ${first}: shorthand ${a[first]}, explicit ${b[first]}`).to.equal(-1);
    expect(b).to.deep.equal(PINNED['cache-aware']);
  });

  it('an explicit graph that differs (no cold placement) routes differently, so the check can fail', () => {
    const c = explicit();
    const changed = parseConfig({
      apiVersion: 'cacheroute/v1',
      endpoints: shorthand.endpoints,
      engineMetrics: { enabled: false },
      plugins: c.plugins.filter((p) => p.type !== 'cold-request-placement'),
      schedulingProfiles: c.schedulingProfiles.map((p) => ({
        ...p,
        plugins: p.plugins.filter((r) => r.pluginRef !== 'cold-request-placement'),
      })),
    });
    expect(traceDecisions(changed, DEFAULT_TRACE)).to.not.deep.equal(PINNED['cache-aware']);
  });

  it('the explicit form reports its label and the plugins it states', () => {
    const c = explicit();
    expect(c.strategy).to.equal('cache-aware');
    expect(c.plugins.map((p) => p.type)).to.include('cold-request-placement');
    expect(c.schedulingProfiles).to.have.length(1);
  });
});
