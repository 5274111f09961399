/**
 * Every router config the project ships parses: each YAML document under examples/ and
 * deploy/ that is a cacheroute config (apiVersion cacheroute/v1, on its own or as a value
 * inside a Kubernetes object such as a ConfigMap's data), and each YAML block in the docs
 * that is a router config or a fragment of one (top-level router keys; a fragment is
 * validated over a minimal document). Why: a renamed or moved key (docs/configuration.md
 * "Moved keys") must not leave a shipped file that the router refuses at start-up.
 * Helm templates are Go templates, not YAML; the chart's rendered config is checked by
 * test/e2e/helm-chart.test.ts with `cacheroute validate`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect } from 'chai';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { parseConfig } from '../../../src/config/parse-config.js';
import { isMapping } from '../../../src/util/deep-merge.js';
import { REPO_ROOT } from '../../kit/repo-paths.js';
import { MINIMAL } from './config-helpers.js';

const API_VERSION = 'cacheroute/v1';
/** Keys that mark a docs YAML block as (a fragment of) a router config. */
const ROUTER_KEYS = /^(apiVersion: cacheroute|strategy:|plugins:|schedulingProfiles:|dataLayer:|endpoints:|engineMetrics:)/m;

interface Shipped {
  readonly where: string;
  readonly doc: unknown;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'templates' ? [] : yamlFiles(p);
    return /\.ya?ml$/.test(e.name) ? [p] : [];
  });
}

/** Router configs in one parsed YAML value: the value itself, or string values (ConfigMap data) that parse to one. */
function routerConfigsIn(v: unknown, at: string): Shipped[] {
  if (isMapping(v) && v['apiVersion'] === API_VERSION) return [{ where: at, doc: v }];
  if (typeof v === 'string' && v.includes(`apiVersion: ${API_VERSION}`)) return routerConfigsIn(parseYaml(v) as unknown, at);
  if (Array.isArray(v)) return v.flatMap((x, i) => routerConfigsIn(x, `${at}[${i}]`));
  if (isMapping(v)) return Object.entries(v).flatMap(([k, x]) => routerConfigsIn(x, `${at}.${k}`));
  return [];
}

function shippedFiles(): Shipped[] {
  return ['examples', 'deploy'].flatMap((top) =>
    yamlFiles(join(REPO_ROOT, top)).flatMap((file) => {
      const rel = relative(REPO_ROOT, file);
      return parseAllDocuments(readFileSync(file, 'utf8')).flatMap((d, i) => routerConfigsIn(d.toJS() as unknown, `${rel}#${i}`));
    }),
  );
}

function docsBlocks(): Shipped[] {
  const dir = join(REPO_ROOT, 'docs');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .flatMap((f) => {
      const text = readFileSync(join(dir, f), 'utf8');
      return [...text.matchAll(/```ya?ml\n([\s\S]*?)```/g)]
        .filter((m) => ROUTER_KEYS.test(m[1]!))
        .flatMap((m) => {
          const line = text.slice(0, m.index).split('\n').length;
          return parseAllDocuments(m[1]!).map((d, i) => ({
            where: `docs/${f}:${line}#${i}`,
            doc: { ...MINIMAL, ...(d.toJS() as Record<string, unknown>) },
          }));
        });
    });
}

function problems(doc: unknown): string {
  try {
    parseConfig(doc, { env: {} });
    return '';
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

describe('shipped router configs parse', () => {
  const files = shippedFiles();

  it('finds the shipped configs (examples, compose, the Kubernetes ConfigMap)', () => {
    const where = files.map((f) => f.where.slice(0, f.where.indexOf('#')));
    expect(where).to.include.members([
      'examples/router.yaml',
      'examples/router-minimal.yaml',
      'examples/router-plugins.yaml',
      'examples/router-pd.yaml',
      'deploy/compose/router.yaml',
      'deploy/kubernetes/cacheroute.yaml',
    ]);
  });

  for (const f of files) it(`${f.where} is a valid config`, () => expect(problems(f.doc), f.where).to.equal(''));

  const blocks = docsBlocks();
  it('finds the router config blocks of the docs', () => expect(blocks.length).to.be.greaterThan(4));
  for (const b of blocks) it(`${b.where} is a valid config (fragment)`, () => expect(problems(b.doc), b.where).to.equal(''));

  it('the check can fail: a moved key in a shipped-style document is refused', () => {
    expect(problems({ ...MINIMAL, cacheAware: { weights: { prefix: 2 } } })).to.include('moved to strategy.weights.prefix-cache');
  });
});
