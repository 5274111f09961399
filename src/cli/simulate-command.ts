/**
 * `cacheroute simulate --trace FILE --engines N [--config router.yaml]`: replays a traffic
 * trace (recorded by the router, src/traffic-trace/, or a public Mooncake one) through the
 * fleet simulator (src/simulate/: the real scheduler on virtual time over the engine model)
 * once per strategy, and prints what a user needs to choose: cache hit rate, TTFT p50/p99,
 * the busiest engine's share of requests, and a recommendation (recommend.ts). Runs are
 * deterministic from `--seed`, so two runs of the same command print the same table.
 */
import { readFileSync, statSync } from 'node:fs';
import { RouterError } from '../core/errors.js';
import { loadConfigFile, readConfigDocument } from '../config/load-config-file.js';
import { STRATEGIES } from '../config/types.js';
import { ENGINE_MODEL_PROFILES } from '../simulate/engine/profiles.js';
import { simulate } from '../simulate/fleet-simulator.js';
import { routerContender, type RouterDocument } from '../simulate/router-policy.js';
import { contender, contenderNames, usesEngineSlots } from '../simulate/contenders.js';
import type { Contender } from '../simulate/policy.js';
import type { SimSummary } from '../simulate/summary.js';
import { parseTrace, type TraceEntry } from '../traffic-trace/trace-format.js';
import { rank, recommendation } from './recommend.js';
import { traceRequests } from './trace-workload.js';

export const SIMULATE_USAGE = `usage:
  cacheroute simulate --trace <file.jsonl> --engines <n> [options]
options:
  --config <router.yaml>   also replay with this router config (labelled "config: <strategy>")
  --strategies a,b,...     what to compare: cacheroute presets, peers' policies, bounds
                           (default: ${defaultStrategies().join(',')})
                           known: ${[...STRATEGIES, ...contenderNames().filter((n) => !n.startsWith('cacheroute:'))].join(', ')}
  --engine-profile <name>  engine model: ${Object.keys(ENGINE_MODEL_PROFILES).join(' | ')} (default gpu-like)
  --time-scale <x>         multiply arrival times (0.5 = twice the load; default 1)
  --max-requests <n>       replay the first n requests (default 50000)
  --seed <n>               simulator seed (default 1)
  --json                   print the results as JSON instead of a table
`;

/** Largest trace file read (a bigger one: cut it, or use --max-requests on a copy). */
const MAX_TRACE_BYTES = 1024 * 1024 * 1024;
const DEFAULT_MAX_REQUESTS = 50_000;
const MAX_ENGINES = 4096;

/** Bounds: shown for the distance to the best possible routing, never recommended (no router can run them). */
const BOUNDS = ['oracle', 'clairvoyant'];

function defaultStrategies(): string[] {
  // `random` is what every other strategy must beat; it says nothing a user would choose.
  return [...STRATEGIES.filter((s) => s !== 'random'), 'oracle'];
}

function knownName(name: string): boolean {
  return (STRATEGIES as readonly string[]).includes(name) || (!name.startsWith('cacheroute:') && contenderNames().includes(name));
}

/**
 * A preset by its name (the real router), else the fleet simulator's contender of that name.
 * A preset with a TTFT model is told the engines' sequence slots (`engineSlots`), as its
 * operator would set `ttft-model.maxNumSeqs` to the engines' --max-num-seqs.
 */
function contenderFor(name: string, engineSlots: number): Contender {
  if (!(STRATEGIES as readonly string[]).includes(name)) return contender(name);
  return { ...contender(`cacheroute:${name}`, { engineSlots }), label: name };
}

export interface SimulateArgs {
  readonly trace: string;
  readonly engines: number;
  readonly config?: string;
  readonly strategies: readonly string[];
  readonly engineProfile: string;
  readonly timeScale: number;
  readonly maxRequests: number;
  readonly seed: number;
  readonly json: boolean;
}

/** Parses the command's arguments; a string is a usage error to print. */
export function parseSimulateArgs(argv: readonly string[]): SimulateArgs | string {
  const v: Record<string, string> = {};
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') json = true;
    else if (a === '--help' || a === '-h') return SIMULATE_USAGE;
    else if (/^--[a-z-]+=/.test(a)) v[a.slice(2, a.indexOf('='))] = a.slice(a.indexOf('=') + 1);
    else if (a.startsWith('--') && i + 1 < argv.length) v[a.slice(2)] = argv[++i]!;
    else return `unknown or incomplete argument: ${a}\n${SIMULATE_USAGE}`;
  }
  const known = ['trace', 'engines', 'config', 'strategies', 'engine-profile', 'time-scale', 'max-requests', 'seed'];
  const unknown = Object.keys(v).find((k) => !known.includes(k));
  if (unknown !== undefined) return `unknown option: --${unknown}\n${SIMULATE_USAGE}`;
  if (v['trace'] === undefined || v['trace'] === '') return `missing --trace <file>\n${SIMULATE_USAGE}`;
  const intIn = (name: string, d: number | undefined, lo: number, hi: number): number | string => {
    const s = v[name];
    if (s === undefined) return d ?? `missing --${name} <n>`;
    const n = Number(s);
    return Number.isInteger(n) && n >= lo && n <= hi ? n : `--${name} must be an integer in [${lo}, ${hi}], got ${s}`;
  };
  const engines = intIn('engines', undefined, 1, MAX_ENGINES);
  const maxRequests = intIn('max-requests', DEFAULT_MAX_REQUESTS, 1, 10_000_000);
  const seed = intIn('seed', 1, 0, 2 ** 31 - 1);
  for (const x of [engines, maxRequests, seed]) if (typeof x === 'string') return `${x}\n${SIMULATE_USAGE}`;
  const timeScale = Number(v['time-scale'] ?? '1');
  if (!(timeScale > 0 && Number.isFinite(timeScale))) return `--time-scale must be a number > 0, got ${v['time-scale']}\n${SIMULATE_USAGE}`;
  const engineProfile = v['engine-profile'] ?? 'gpu-like';
  if (!Object.hasOwn(ENGINE_MODEL_PROFILES, engineProfile)) return `unknown --engine-profile ${engineProfile}\n${SIMULATE_USAGE}`;
  const strategies = v['strategies'] !== undefined ? v['strategies'].split(',').filter((s) => s !== '') : defaultStrategies();
  const bad = strategies.find((s) => !knownName(s));
  if (bad !== undefined) return `unknown strategy ${bad}\n${SIMULATE_USAGE}`;
  if (strategies.length === 0 && v['config'] === undefined) return `nothing to compare: give --strategies or --config\n${SIMULATE_USAGE}`;
  return {
    trace: v['trace'],
    engines: engines as number,
    ...(v['config'] !== undefined ? { config: v['config'] } : {}),
    strategies,
    engineProfile,
    timeScale,
    maxRequests: maxRequests as number,
    seed: seed as number,
    json,
  };
}

export interface SimulateRow extends SimSummary {
  readonly label: string;
  readonly source: string;
  /** A bound (oracle): the best possible, not a choice. */
  readonly bound: boolean;
}

export interface SimulateResult {
  readonly trace: { readonly requests: number; readonly replayed: number; readonly spanMs: number; readonly outputEstimated: number };
  readonly engines: number;
  readonly engineProfile: string;
  readonly seed: number;
  readonly timeScale: number;
  /** Choices best first, then the bounds. */
  readonly rows: readonly SimulateRow[];
  readonly recommendation: string;
}

/** Sections of a serving config that describe this deployment, not routing: the simulator supplies its own. */
const DEPLOYMENT_KEYS = ['endpoints', 'discovery', 'server', 'replication', 'trafficTrace'];

function readTrace(path: string): TraceEntry[] {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_TRACE_BYTES) throw new RouterError('BAD_CONFIG', `trace ${path}: ${size} bytes exceeds ${MAX_TRACE_BYTES}`);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof RouterError) throw err;
    throw new RouterError('BAD_CONFIG', `cannot read trace ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const entries = parseTrace(text, path);
  if (entries.length === 0) throw new RouterError('BAD_CONFIG', `trace ${path} has no requests`);
  return entries;
}

/** The contenders: each preset, then the user's config. */
function contenders(args: SimulateArgs): Contender[] {
  const slots = ENGINE_MODEL_PROFILES[args.engineProfile]!.maxNumSeqs;
  const out = args.strategies.map((name) => contenderFor(name, slots));
  if (args.config !== undefined) {
    const config = loadConfigFile(args.config, {}); // full validation, with the file's name in errors
    const doc = readConfigDocument(args.config) as Record<string, unknown>;
    const routing: Record<string, unknown> = {};
    for (const [k, val] of Object.entries(doc)) if (!DEPLOYMENT_KEYS.includes(k)) routing[k] = val;
    out.push(routerContender(`config: ${config.strategy}`, { document: routing as RouterDocument }, args.config));
  }
  return out;
}

/** Runs every contender on the trace. `progress` gets one line per finished run. */
export function runSimulate(args: SimulateArgs, progress: (line: string) => void = () => {}): SimulateResult {
  const entries = readTrace(args.trace);
  const requests = traceRequests(entries, { timeScale: args.timeScale, maxRequests: args.maxRequests });
  const model = ENGINE_MODEL_PROFILES[args.engineProfile]!;
  const fleet = Array.from({ length: args.engines }, () => ({ model, profile: args.engineProfile }));
  const rows: SimulateRow[] = [];
  for (const c of contenders(args)) {
    const { summary } = simulate(requests, fleet, c, { seed: args.seed });
    rows.push({ ...summary, label: c.label, source: c.source, bound: BOUNDS.includes(c.label) });
    progress(`${c.label}: ${summary.requests} requests in ${(summary.wallMs / 1000).toFixed(1)} s`);
  }
  const ranked = rank(rows.filter((r) => !r.bound));
  const bounds = rows.filter((r) => r.bound);
  const replayed = entries.slice(0, args.maxRequests);
  return {
    trace: {
      requests: entries.length,
      replayed: replayed.length,
      spanMs: replayed.length > 0 ? replayed[replayed.length - 1]!.atMs : 0,
      outputEstimated: replayed.filter((e) => e.outputEstimated === true).length,
    },
    engines: args.engines,
    engineProfile: args.engineProfile,
    seed: args.seed,
    timeScale: args.timeScale,
    rows: [...ranked, ...bounds],
    recommendation: recommendation(ranked) + distanceToBound(ranked[0], bounds[0]) + slotsHint(ranked[0]?.label, args.engineProfile),
  };
}

/**
 * For a recommended preset with a TTFT model: the setting it was simulated with, which the
 * user's engines need too (the model's default is vLLM's 256 sequence slots).
 */
function slotsHint(label: string | undefined, engineProfile: string): string {
  if (label === undefined || !usesEngineSlots(label)) return '';
  const slots = ENGINE_MODEL_PROFILES[engineProfile]!.maxNumSeqs;
  return `; simulated with ttft-model.maxNumSeqs ${slots} (the ${engineProfile} engines' slots): set it to your engines' --max-num-seqs (strategy: {name: ${label}, plugins: {ttft-model: {maxNumSeqs: N}}})`;
}

/** ` (1.07x / 1.12x the oracle's TTFT p50 / p99)` for the recommended row, when a bound ran. */
function distanceToBound(best: SimulateRow | undefined, bound: SimulateRow | undefined): string {
  if (best === undefined || bound === undefined) return '';
  const r = (a: number, b: number): string => (b > 0 ? `${(a / b).toFixed(2)}x` : 'n/a');
  return `; it is ${r(best.ttftP50Ms, bound.ttftP50Ms)} / ${r(best.ttftP99Ms, bound.ttftP99Ms)} the ${bound.label}'s TTFT p50 / p99`;
}

/** The table a user reads. */
export function formatSimulateResult(r: SimulateResult, tracePath: string): string {
  const head =
    `trace ${tracePath}: ${r.trace.replayed} of ${r.trace.requests} requests over ${(r.trace.spanMs / 1000).toFixed(1)} s` +
    `${r.timeScale !== 1 ? ` (arrivals x${r.timeScale})` : ''}; ${r.engines} engines (${r.engineProfile}); seed ${r.seed}\n`;
  const cols = ['strategy', 'hit rate', 'TTFT p50 ms', 'TTFT p99 ms', 'busiest share', 'failed'];
  const cells = r.rows.map((x) => [
    x.bound ? `(${x.label}: bound)` : x.label,
    x.hitRate.toFixed(3),
    x.ttftP50Ms.toFixed(1),
    x.ttftP99Ms.toFixed(1),
    x.busiestShare.toFixed(3),
    String(x.failed),
  ]);
  const width = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]): string => row.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join('  ');
  const notes: string[] = [`busiest share: requests on the busiest engine / all (even spread: ${(1 / r.engines).toFixed(3)})`];
  if (r.rows.some((x) => x.bound)) notes.push("bound: sees every engine's exact cache and queue at once; no router can run it");
  if (r.trace.outputEstimated > 0) {
    notes.push(`${r.trace.outputEstimated} output lengths were estimated from response sizes (about ±15%)`);
  }
  return `${head}\n${line(cols)}\n${cells.map(line).join('\n')}\n\n${notes.join('\n')}\nrecommendation: ${r.recommendation}\n`;
}
