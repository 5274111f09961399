/**
 * Issue #25's bar for the plugin surface: a new scorer needs only its own file, one
 * registration line, its test and its generated docs entry. The scorer here is a fixture
 * (test/fixtures/plugins/preferred-pool-scorer.ts) registered with the same `.register()`
 * line every built-in has in src/plugins/register-builtins.ts; a YAML plugin graph uses it
 * by type name, its own schema checks its parameters, it changes where requests go, and the
 * generated plugin reference gains exactly its entry.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { createScheduler } from '../../../src/compose/create-scheduler.js';
import { parseConfig } from '../../../src/config/parse-config.js';
import { renderPluginReference } from '../../../src/plugins/plugin-reference.js';
import { builtinCatalog } from '../../../src/plugins/register-builtins.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { PREFERRED_POOL_SCORER, preferredPoolScorer } from '../../fixtures/plugins/preferred-pool-scorer.js';
import { REPO_ROOT } from '../../kit/repo-paths.js';
import { request, text } from '../builders.js';

/** The one registration line. */
const catalog = builtinCatalog().register(preferredPoolScorer);

/** Cache-aware scoring (prefix 3, queue 2) over three engines, two in pool a, one in pool b; `extraPlugin`/`extraRef` add an instance and its profile entry. */
function graphYaml(extraPlugin: string, extraRef: string): string {
  return `
apiVersion: cacheroute/v1
engineMetrics: { enabled: false }
endpoints:
  - { address: 127.0.0.1:9001, pool: a }
  - { address: 127.0.0.1:9002, pool: a }
  - { address: 127.0.0.1:9003, pool: b }
plugins:
  - type: model-subset-filter
  - type: health-filter
  - type: prefix-cache
  - type: queue-scorer
${extraPlugin}
  - type: max-score-picker
schedulingProfiles:
  - name: pooled
    plugins:
      - pluginRef: model-subset-filter
      - pluginRef: health-filter
      - { pluginRef: prefix-cache, weight: 3 }
      - { pluginRef: queue-scorer, weight: 2 }
${extraRef}
      - pluginRef: max-score-picker
`;
}

const WITH_SCORER = graphYaml(
  `  - type: ${PREFERRED_POOL_SCORER}\n    name: pool-b\n    parameters: { pool: b }`,
  '      - { pluginRef: pool-b, weight: 10 }',
);
const WITHOUT = graphYaml('', '');

/** Endpoint indexes of 12 requests: 6 prompts, each sent twice (the second finds its prefix cached). */
function route(yaml: string): { endpoints: number[]; scorers: string[] } {
  const s = createScheduler(parseConfig(parseYaml(yaml), { catalog, env: {} }), { clock: new ManualClock(), rng: seededRng(7), catalog });
  const endpoints: number[] = [];
  let scorers: string[] = [];
  for (let k = 0; k < 6; k++) {
    for (let rep = 0; rep < 2; rep++) {
      const t = s.route(request({ prefix: text(k + 1, 2000) }));
      endpoints.push(t.decision.endpoint.index);
      scorers = Object.keys(t.decision.candidates[0]?.scores ?? {});
      t.finish({ status: 200, aborted: false });
    }
  }
  return { endpoints, scorers };
}

describe('a new scorer plugin: its file, one registration line, its test, its docs entry', () => {
  it('a YAML plugin graph uses it by type, and it changes the decisions', () => {
    const before = route(WITHOUT);
    const after = route(WITH_SCORER);
    // Without it, cache-aware spreads the six prompts over pool a too; with weight 10 over 3 + 2, pool b (index 2) wins every time.
    expect(before.endpoints.filter((e) => e !== 2).length).to.be.greaterThan(0);
    expect(after.endpoints).to.deep.equal(new Array(12).fill(2));
    expect(after.scorers).to.include('pool-b');
    expect(before.scorers).to.not.include('pool-b');
  });

  it('its own schema checks its parameters, and an unregistered type is refused', () => {
    const bad = parseYaml(WITH_SCORER.replace('{ pool: b }', '{ pool: b, otherScore: 2 }'));
    expect(() => parseConfig(bad, { catalog, env: {} })).to.throw(
      /plugins\[4\]\.parameters\.otherScore: expected number in \[0, 1\], got 2/,
    );
    expect(() => parseConfig(parseYaml(WITH_SCORER), { env: {} })).to.throw(`unknown plugin type "${PREFERRED_POOL_SCORER}"`);
  });

  it('the generated plugin reference gains exactly its entry (parameters, defaults, descriptions from its schema)', () => {
    const rendered = renderPluginReference(catalog);
    const entry = rendered.slice(
      rendered.indexOf(`## ${PREFERRED_POOL_SCORER}\n`),
      rendered.indexOf('\n## ', rendered.indexOf(`## ${PREFERRED_POOL_SCORER}\n`)) + 1,
    );
    expect(entry).to.contain('Test fixture: prefers endpoints of one pool');
    expect(entry).to.contain('| `pool` | string | `"default"` | The preferred pool. |');
    expect(entry).to.match(/\| `otherScore` \| number \(>= 0, <= 1\) \| `0` \| Score of an endpoint in any other pool\. \|/);
    const withoutEntry = rendered.replace(entry, '').replace(`- [\`${PREFERRED_POOL_SCORER}\`](#${PREFERRED_POOL_SCORER})\n`, '');
    expect(
      withoutEntry === readFileSync(join(REPO_ROOT, 'docs', 'plugins.md'), 'utf8'),
      'the rest is docs/plugins.md as committed',
    ).to.equal(true);
  });
});
