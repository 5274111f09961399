/**
 * The intended layering of src/, checked on every import (type imports, re-exports and
 * `import()` types included): each top-level folder may import only the folders its row of
 * LAYERS allows, and no set of files imports itself round in a circle. docs/architecture.md
 * draws the same table; decision 0213 says why it is shaped so.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT } from '../kit/repo-paths.js';

const SRC = join(REPO_ROOT, 'src');

/** Folder → the folders it may import (its own files are always allowed), lowest layer first. */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  // L0: foundations
  core: [],
  util: ['core'],
  logging: ['core', 'util'],
  // L1: pure algorithms
  request: ['core', 'util', 'logging'],
  'prefix-cache': ['core', 'util', 'logging'],
  tokenization: ['core', 'util', 'logging', 'prefix-cache'],
  'precise-index': ['core', 'util', 'logging', 'prefix-cache', 'tokenization'],
  // L2: endpoints, the framework's interfaces, the data layer, engine KV events
  endpoints: ['core', 'util', 'logging'],
  framework: ['core', 'util', 'logging', 'endpoints'],
  datalayer: ['core', 'util', 'logging', 'endpoints', 'framework', 'prefix-cache'],
  'kv-events': ['core', 'util', 'logging', 'framework', 'prefix-cache', 'tokenization', 'precise-index'],
  // L3: the scheduling runtime
  scheduling: ['core', 'util', 'logging', 'endpoints', 'framework', 'datalayer'],
  // L4: features
  plugins: [
    'core',
    'util',
    'logging',
    'request',
    'prefix-cache',
    'tokenization',
    'precise-index',
    'endpoints',
    'framework',
    'datalayer',
    'kv-events',
    'scheduling',
  ],
  health: ['core', 'util', 'logging', 'endpoints', 'framework', 'scheduling'],
  admission: ['core', 'util', 'logging', 'endpoints', 'framework'],
  discovery: ['core', 'util', 'logging', 'endpoints'],
  // L5: edges and observers
  extproc: ['core', 'util', 'logging', 'request', 'endpoints', 'framework', 'scheduling'],
  telemetry: ['core', 'util', 'logging', 'endpoints', 'framework', 'scheduling', 'plugins', 'extproc'],
  'traffic-trace': ['core', 'util', 'logging', 'prefix-cache', 'framework', 'scheduling'],
  admin: ['core', 'util', 'logging', 'telemetry'],
  replication: ['core', 'util', 'logging', 'prefix-cache', 'endpoints', 'framework', 'datalayer', 'plugins', 'admin'],
  // L6: the config document, composed from the features' own sections
  config: [
    'core',
    'util',
    'logging',
    'request',
    'endpoints',
    'framework',
    'datalayer',
    'scheduling',
    'plugins',
    'health',
    'admission',
    'discovery',
    'extproc',
    'telemetry',
    'replication',
    'traffic-trace',
  ],
};
const BELOW_COMPOSE = Object.keys(LAYERS);
/** L7: the composition root and what runs at its level. */
const COMPOSITION: Readonly<Record<string, readonly string[]>> = {
  compose: BELOW_COMPOSE,
  simulate: [...BELOW_COMPOSE, 'compose'],
  cli: [...BELOW_COMPOSE, 'compose', 'simulate'],
  /** The P/D sidecar: its own process, beside the router. */
  'pd-sidecar': BELOW_COMPOSE,
  'main.ts': [...BELOW_COMPOSE, 'compose', 'cli', 'pd-sidecar'],
};
const ALLOWED: Readonly<Record<string, readonly string[]>> = { ...LAYERS, ...COMPOSITION };
/** Generated protobuf types: a leaf anyone may use. */
const ANYONE = new Set(['gen']);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Relative module specifiers of a file: static imports, re-exports (type-only too) and import() types. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const stat = [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+['"]([^'"]+)['"]/gms)].map((m) => m[1]!);
  const side = [...text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
  const dyn = [...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
  return [...stat, ...side, ...dyn].filter((s) => s.startsWith('.'));
}

/** The source file a relative specifier names. */
function target(from: string, spec: string): string {
  return resolve(dirname(from), spec.replace(/\.js$/, '.ts'));
}

/** Top-level folder of a src file (or the file's own name at the top). */
function unit(file: string): string {
  const parts = relative(SRC, file).split(sep);
  return parts.length === 1 ? parts[0]! : parts[0]!;
}

const ALL = files(SRC).filter((f) => unit(f) !== 'gen');
const GRAPH = new Map(ALL.map((f) => [f, importsOf(f).map((s) => target(f, s))]));

/** Strongly connected groups of more than one file (Tarjan), each as paths under src/. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(relative(SRC, w));
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('layering of src/ (folder → allowed folders, no import cycles)', () => {
  it('reads every kind of import (type-only, re-export, import() types) and resolves it', () => {
    expect(importsOf(join(SRC, 'scheduling', 'scheduler.ts'))).to.include('./plugin-graph.js');
    for (const [f, deps] of GRAPH) for (const d of deps) expect(existsSync(d), `${relative(SRC, f)} → ${d}`).to.equal(true);
  });

  it('every folder of src/ has a row in the table', () => {
    const units = new Set(ALL.map(unit));
    const missing = [...units].filter((u) => !(u in ALLOWED) && !ANYONE.has(u));
    expect(missing).to.deep.equal([]);
  });

  it('each folder imports only the folders its row allows (type imports included)', () => {
    const bad: string[] = [];
    for (const [f, deps] of GRAPH) {
      const from = unit(f);
      for (const d of deps) {
        const to = unit(d);
        if (to === from || ANYONE.has(to)) continue;
        if (!(ALLOWED[from] ?? []).includes(to)) bad.push(`${relative(SRC, f)} → ${relative(SRC, d)}`);
      }
    }
    expect(bad).to.deep.equal([]);
  });

  it('the table itself has no circle (every allowed edge points to a lower row)', () => {
    const folderGraph = new Map(Object.entries(ALLOWED).map(([k, v]) => [join(SRC, k), v.map((t) => join(SRC, t))]));
    expect(cycles(folderGraph)).to.deep.equal([]);
  });

  it('no file of src/ reaches itself through its imports', () => {
    expect(cycles(GRAPH)).to.deep.equal([]);
  });

  it('only src/logging/ imports pino, and telemetry has no logger module', () => {
    const pino = ALL.filter((f) => /^\s*import\b[^;]*?\bfrom\s+'pino'/ms.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
    expect(pino).to.deep.equal([join('logging', 'logger.ts')]);
    expect(existsSync(join(SRC, 'telemetry', 'logger.ts'))).to.equal(false);
  });

  it('the cycle check finds a circle when there is one', () => {
    const a = join(SRC, 'a.ts');
    const b = join(SRC, 'b.ts');
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).to.deep.equal([['a.ts', 'b.ts']]);
  });
});
