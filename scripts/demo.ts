/**
 * `npm run demo`: cacheroute in front of four simulated engines (or two real vLLM CPU
 * engines with `--engines vllm`), behind a real Envoy.
 *
 * Starts 4 sim engines, the router (examples/router.yaml) and Envoy (envoy/override-host.yaml)
 * on the canonical demo ports when they are free (ephemeral ports otherwise), sends a short
 * seeded chat workload (6 shared system prompts x varied questions, plus unique prompts),
 * and prints where requests went, the router's request-level prefix-hit prediction, the
 * engines' token-level prefix-cache hit rate and client-side TTFT. Then, for contrast, the
 * same workload through Envoy alone (round robin) on freshly reset engines. Everything is
 * stopped at the end, on error and on Ctrl-C.
 *
 *   npm run demo [-- --requests 120 --concurrency 8 --seed 42 --no-baseline]
 *   npm run demo -- --engines vllm     (2 vLLM engines, one core each, 40 KV blocks: ~1 min to
 *                                       start; the workload is scaled to them: 64 requests, 4 prompts)
 *   npm run demo -- --engines vllm --pd [shared-store|nixl]
 *                                      (prefill/decode disaggregation on 2 vLLM engines: scripts/demo-pd.ts)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { seededRng, type Rng } from '../src/util/rng.js';
import { PD_DEMO_CONNECTORS, runPdDemo, type PdDemoConnector } from './demo-pd.js';
import { startVllmEngines } from '../test/kit/vllm-engines.js';
import { TINY_MODEL_NAME, vllmUnavailableReason } from '../test/kit/vllm-paths.js';
import { syntheticTokens } from '../test/kit/synthetic-text.js';
import { CHAT_PATH, chatRequest, mapLimit, systemPrompt } from '../test/kit/chat-requests.js';
import { httpRequest, postJson } from '../test/kit/http-client.js';
import {
  engineAddress,
  mergeDoc,
  startEngines,
  startEnvoy,
  startRouter,
  type ConfigDoc,
  type EnvoyProcess,
  type RouterProcess,
} from '../test/kit/processes.js';
import { sumSamples } from '../test/kit/prometheus-text.js';
import { REPO_ROOT } from '../test/kit/repo-paths.js';

const DEMO_PORTS = { engines: 8001, grpc: 9002, admin: 9003, envoyAdmin: 9901, listener: 10000 };
/** KV cache per sim engine (16-token blocks): room for ~3 system prompts plus running requests, so placement matters. */
const KV_CACHE_BLOCKS = 400;

type EngineKind = 'sim' | 'vllm';

/** The workload's shape per engine kind: the real engines (one CPU core each) get a smaller one. */
interface Shape {
  readonly model: string;
  readonly sharedPrompts: number;
  /** Words of synthetic text per system prompt (1 sim token; ~1.6 tokens of the tiny model). */
  readonly systemTokens: number;
  readonly maxTokens: number;
  readonly deadlineMs: number;
  readonly requests: number;
  readonly concurrency: number;
}

const SHAPES: Readonly<Record<EngineKind, Shape>> = {
  // sim-llama: the model examples/router.yaml assigns to its engines.
  sim: { model: 'sim-llama', sharedPrompts: 6, systemTokens: 1500, maxTokens: 24, deadlineMs: 20_000, requests: 120, concurrency: 8 },
  // ~1,000-token system prompts: 7-8 of vLLM CPU's 128-token blocks, ~0.5 s cold on one core;
  // with VLLM_DEMO_BLOCKS per engine two of the four fit next to the running requests.
  vllm: { model: TINY_MODEL_NAME, sharedPrompts: 4, systemTokens: 600, maxTokens: 16, deadlineMs: 180_000, requests: 64, concurrency: 4 },
};

interface Options {
  readonly engines: EngineKind;
  readonly requests: number;
  readonly concurrency: number;
  readonly seed: number;
  readonly baseline: boolean;
  /** Prefill/decode disaggregation instead of the routing comparison (`--pd`, real engines only). */
  readonly pd?: PdDemoConnector;
}

function parseArgs(argv: readonly string[]): Options {
  const kindAt = argv.indexOf('--engines');
  const engines = kindAt >= 0 ? argv[kindAt + 1] : 'sim';
  if (engines !== 'sim' && engines !== 'vllm') throw new Error(`--engines must be sim or vllm, got ${String(engines)}`);
  const shape = SHAPES[engines];
  const opts: { -readonly [K in keyof Options]: Options[K] } = {
    engines: engines as EngineKind,
    requests: shape.requests,
    concurrency: shape.concurrency,
    seed: 42,
    baseline: true,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 1) throw new Error(`${a} needs a positive integer`);
      return v;
    };
    if (a === '--requests') opts.requests = Math.min(num(), 2000);
    else if (a === '--concurrency') opts.concurrency = Math.min(num(), 64);
    else if (a === '--seed') opts.seed = num();
    else if (a === '--no-baseline') opts.baseline = false;
    else if (a === '--engines') i++;
    else if (a === '--pd') {
      const next = argv[i + 1];
      opts.pd = next !== undefined && !next.startsWith('--') ? (argv[++i] as PdDemoConnector) : 'shared-store';
      if (!PD_DEMO_CONNECTORS.includes(opts.pd)) throw new Error(`--pd must be ${PD_DEMO_CONNECTORS.join(' or ')}, got ${opts.pd}`);
    } else
      throw new Error(
        `unknown argument ${a} (try --engines sim|vllm --requests N --concurrency N --seed N --no-baseline --pd [shared-store|nixl])`,
      );
  }
  if (opts.pd !== undefined && opts.engines !== 'vllm') throw new Error('--pd runs on real engines: add --engines vllm');
  return opts;
}

// ---------------------------------------------------------------------------------------
// Workload

interface DemoRequest {
  readonly body: Record<string, unknown>;
  readonly shared: boolean;
}

function shuffle<T>(items: T[], rng: Rng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/** ~5/6 of the requests share one of the shape's system prompts; the rest have a prompt of their own. */
function buildWorkload(n: number, seed: number, shape: Shape): DemoRequest[] {
  const rng = seededRng(seed);
  const systems = Array.from({ length: shape.sharedPrompts }, (_, k) => systemPrompt(`demo-${seed}-${k}`, shape.systemTokens));
  const unique = Math.max(1, Math.round(n / 6));
  const out: DemoRequest[] = [];
  for (let i = 0; i < n; i++) {
    const question = syntheticTokens(`demo-q-${seed}-${i}`, 20 + rng.int(60));
    const shared = i >= unique;
    const system = shared
      ? (systems[rng.int(shape.sharedPrompts)] as string)
      : systemPrompt(`demo-unique-${seed}-${i}`, shape.systemTokens);
    out.push({
      body: chatRequest(system, question, { model: shape.model, maxTokens: shape.maxTokens, ignoreEos: true, stream: true }),
      shared,
    });
  }
  return shuffle(out, rng);
}

interface Result {
  readonly status: number;
  /** ms to the first generated token (first SSE chunk with content), if any. */
  readonly ttftMs?: number;
}

async function send(url: string, req: DemoRequest, signal: AbortSignal, deadlineMs: number): Promise<Result> {
  let ttftMs: number | undefined;
  try {
    const res = await postJson(url, req.body, {
      signal,
      timeoutMs: deadlineMs,
      onChunk: (chunk, elapsed) => {
        if (ttftMs === undefined && /"content":"[^"]/.test(chunk.toString('utf8'))) ttftMs = elapsed;
      },
    });
    return { status: res.status, ...(ttftMs !== undefined ? { ttftMs } : {}) };
  } catch {
    return { status: 0 };
  }
}

// ---------------------------------------------------------------------------------------
// Measurements

interface EngineCounters {
  readonly hits: number;
  readonly queries: number;
  /** Requests the engine finished (vllm:request_success_total, summed over reasons). */
  readonly served: number;
}

/** The engines as the demo uses them, whichever kind they are. */
interface DemoFleet {
  /** `ip:port` and base URL of each engine. */
  readonly engines: ReadonlyArray<{ readonly address: string; readonly url: string }>;
  /** Empties every engine's prefix cache (sim: /admin/reset; vLLM: /reset_prefix_cache). */
  reset(): Promise<void>;
  stop(): Promise<unknown>;
}

async function engineCounters(fleet: DemoFleet): Promise<Map<string, EngineCounters>> {
  const out = new Map<string, EngineCounters>();
  await Promise.all(
    fleet.engines.map(async (e) => {
      const text = (await httpRequest(`${e.url}/metrics`, { timeoutMs: 5000 })).text();
      out.set(e.address, {
        hits: sumSamples(text, 'vllm:prefix_cache_hits_total'),
        queries: sumSamples(text, 'vllm:prefix_cache_queries_total'),
        served: sumSamples(text, 'vllm:request_success_total'),
      });
    }),
  );
  return out;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

interface PassSummary {
  readonly label: string;
  readonly perEngine: Map<string, { requests: number; hitRate: number }>;
  readonly tokenHitRate: number;
  readonly ttftP50: number;
  readonly ttftP99: number;
  readonly errors: number;
  readonly seconds: number;
  readonly predictedHitRate?: number;
}

async function runPass(
  label: string,
  envoy: EnvoyProcess,
  fleet: DemoFleet,
  workload: readonly DemoRequest[],
  concurrency: number,
  deadlineMs: number,
  router?: RouterProcess,
): Promise<PassSummary> {
  const before = await engineCounters(fleet);
  const signal = AbortSignal.timeout(deadlineMs);
  const started = performance.now();
  const results = await mapLimit(workload, concurrency, (req) =>
    signal.aborted ? Promise.resolve<Result>({ status: 0 }) : send(`${envoy.url}${CHAT_PATH}`, req, signal, deadlineMs),
  );
  const seconds = (performance.now() - started) / 1000;
  const after = await engineCounters(fleet);

  const perEngine = new Map<string, { requests: number; hitRate: number }>();
  let hits = 0;
  let queries = 0;
  for (const e of fleet.engines) {
    const id = e.address;
    const b = before.get(id) ?? { hits: 0, queries: 0, served: 0 };
    const a = after.get(id) ?? b;
    const dh = a.hits - b.hits;
    const dq = a.queries - b.queries;
    hits += dh;
    queries += dq;
    perEngine.set(id, { requests: a.served - b.served, hitRate: dq > 0 ? dh / dq : Number.NaN });
  }
  const ttfts = results.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs])).sort((x, y) => x - y);

  let predictedHitRate: number | undefined;
  if (router) {
    const res = await httpRequest(`${router.adminUrl}/debug/decisions?n=${workload.length}`, { timeoutMs: 5000 });
    const doc = res.json() as { decisions?: Array<{ matchedBlocks: number }> };
    const decisions = doc.decisions ?? [];
    if (decisions.length > 0) predictedHitRate = decisions.filter((d) => d.matchedBlocks > 0).length / decisions.length;
  }
  return {
    label,
    perEngine,
    tokenHitRate: queries > 0 ? hits / queries : Number.NaN,
    ttftP50: percentile(ttfts, 50),
    ttftP99: percentile(ttfts, 99),
    errors: results.filter((r) => r.status !== 200).length,
    seconds,
    ...(predictedHitRate !== undefined ? { predictedHitRate } : {}),
  };
}

// ---------------------------------------------------------------------------------------
// Output

const pct = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? '-' : `${(x * 100).toFixed(1)}%`);
const ms = (x: number): string => (Number.isNaN(x) ? '-' : `${x.toFixed(0)} ms`);

function printSummary(passes: readonly PassSummary[], engines: readonly string[], total: number): void {
  const col = 30;
  const pad = (s: string, n: number): string => s.padEnd(n);
  const lines: string[] = [];
  lines.push(pad('', 22) + passes.map((p) => pad(p.label, col)).join(''));
  lines.push(pad('engine', 22) + passes.map(() => pad('requests  prefix-cache hit', col)).join(''));
  for (const id of engines) {
    lines.push(
      pad(id, 22) +
        passes
          .map((p) => {
            const e = p.perEngine.get(id);
            const share = e ? `${String(e.requests).padStart(4)} (${pct(e.requests / total).padStart(5)})` : '-';
            return pad(`${share}  ${pct(e?.hitRate)}`, col);
          })
          .join(''),
    );
  }
  lines.push('');
  const row = (name: string, f: (p: PassSummary) => string): void => {
    lines.push(pad(name, 22) + passes.map((p) => pad(f(p), col)).join(''));
  };
  row('router predicted hit', (p) => (p.predictedHitRate === undefined ? '-' : `${pct(p.predictedHitRate)} of requests`));
  row('engine prefix hit', (p) => `${pct(p.tokenHitRate)} of prompt tokens`);
  row('TTFT p50 / p99', (p) => `${ms(p.ttftP50)} / ${ms(p.ttftP99)}`);
  row('errors', (p) => String(p.errors));
  row('wall time', (p) => `${p.seconds.toFixed(1)} s`);
  process.stdout.write(lines.join('\n') + '\n');
}

// ---------------------------------------------------------------------------------------
// Main

async function portsFree(ports: readonly number[]): Promise<boolean> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (!free) return false;
  }
  return true;
}

function log(msg: string): void {
  process.stdout.write(`demo: ${msg}\n`);
}

async function startSimFleet(fixed: boolean, model: string): Promise<DemoFleet> {
  const sim = await startEngines({
    count: 4,
    ...(fixed ? { basePort: DEMO_PORTS.engines } : {}),
    flags: { profile: 'gpu-like', model, 'kv-cache-blocks': KV_CACHE_BLOCKS },
  });
  const engines = sim.engines.map((e) => ({ address: engineAddress(e), url: e.url }));
  return {
    engines,
    reset: async () => {
      await Promise.all(engines.map((e) => postJson(`${e.url}/admin/reset`, {})));
    },
    stop: () => sim.stop(),
  };
}

/** KV blocks per real engine (128 tokens each): room for two of the four shared prompts, so placement matters. */
const VLLM_DEMO_BLOCKS = 40;

/** `npm run demo` sets up only what the simulated demo runs; vLLM has its own setup (idempotent). */
function ensureVllm(): void {
  if (vllmUnavailableReason() !== undefined) {
    log('setting up vLLM CPU (scripts/setup-vllm.sh; minutes on a fresh machine)');
    execFileSync('bash', [join(REPO_ROOT, 'scripts', 'setup-vllm.sh')], {
      cwd: REPO_ROOT,
      stdio: ['ignore', process.stderr, process.stderr],
    });
  }
  const missing = vllmUnavailableReason();
  if (missing !== undefined) throw new Error(`--engines vllm: ${missing}`);
}

/** Two vLLM CPU engines (test/kit/vllm-engines.ts), one core each, on 127.0.0.2 and .3. */
async function startVllmFleet(): Promise<DemoFleet> {
  ensureVllm();
  log('starting 2 vLLM CPU engines (about a minute)');
  const real = await startVllmEngines({ count: 2, numGpuBlocks: VLLM_DEMO_BLOCKS, maxModelLen: 4096 });
  const engines = real.engines.map((e) => ({ address: e.id, url: e.url }));
  return {
    engines,
    reset: async () => {
      for (const e of engines) {
        const res = await postJson(`${e.url}/reset_prefix_cache`, {});
        if (res.status !== 200) throw new Error(`${e.address}: /reset_prefix_cache answered ${res.status}`);
      }
    },
    stop: () => real.stop(),
  };
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.pd !== undefined) {
    ensureVllm();
    return runPdDemo(opts.pd, opts.seed, log);
  }
  const shape = { ...SHAPES[opts.engines], concurrency: opts.concurrency };
  // Real engines get free ports on 127.0.0.2/.3, so Envoy is always rendered with them.
  const enginePorts =
    opts.engines === 'sim' ? [DEMO_PORTS.engines, DEMO_PORTS.engines + 1, DEMO_PORTS.engines + 2, DEMO_PORTS.engines + 3] : [];
  const fixed = await portsFree([...enginePorts, DEMO_PORTS.grpc, DEMO_PORTS.admin, DEMO_PORTS.envoyAdmin, DEMO_PORTS.listener]);
  if (!fixed) log('some demo ports (8001-8004, 9002, 9003, 9901, 10000) are busy: using ephemeral ports');

  let fleet: DemoFleet | undefined;
  let router: RouterProcess | undefined;
  const envoys: EnvoyProcess[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> => {
    stopping ??= (async () => {
      await Promise.all(envoys.map((e) => e.stop({ graceMs: 2000 })));
      await router?.stop({ graceMs: 2000 });
      await fleet?.stop();
    })();
    return stopping;
  };
  process.once('SIGINT', () => {
    log('interrupted: stopping everything');
    void stopAll().finally(() => process.exit(130));
  });

  try {
    const started = performance.now();
    fleet = opts.engines === 'vllm' ? await startVllmFleet() : await startSimFleet(fixed, shape.model);
    const engines = fleet.engines.map((e) => e.address);
    log(`engines ${engines.join(' ')}`);

    const example = parse(readFileSync(join(REPO_ROOT, 'examples', 'router.yaml'), 'utf8')) as ConfigDoc;
    const config = mergeDoc(example, {
      server: fixed ? {} : { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0' },
      endpoints: engines.map((address) => ({ address, models: [shape.model] })),
      telemetry: { logLevel: 'warn', recentDecisions: Math.max(256, opts.requests) },
      // A real vLLM renders /metrics in its API server (~13 ms): keep scrapes under 1% of its time.
      ...(opts.engines === 'vllm' ? { engineMetrics: { maxScrapeShare: 0.01 } } : {}),
    });
    router = await startRouter({ config, name: 'demo-router' });
    log(`router ext_proc ${router.grpcAddress}, admin ${router.adminUrl}`);

    const envoy = await startEnvoy({
      variant: 'override-host',
      name: 'demo-envoy',
      ...(fixed && opts.engines === 'sim'
        ? { listenerPort: DEMO_PORTS.listener, adminPort: DEMO_PORTS.envoyAdmin }
        : fixed
          ? { listenerPort: DEMO_PORTS.listener, adminPort: DEMO_PORTS.envoyAdmin, routerAddress: router.grpcAddress, engines }
          : { listenerPort: 0, adminPort: 0, routerAddress: router.grpcAddress, engines }),
    });
    envoys.push(envoy);
    await envoy.waitForClusterHealth('cacheroute_extproc', true);
    log(`envoy ${envoy.url} (admin ${envoy.adminUrl}), logs in ${envoy.logFile.slice(0, envoy.logFile.lastIndexOf('/'))}`);

    const workload = buildWorkload(opts.requests, opts.seed, shape);
    const shared = workload.filter((r) => r.shared).length;
    const size =
      opts.engines === 'sim'
        ? `~${shape.systemTokens} tokens`
        : `${shape.systemTokens} words (~${Math.round(shape.systemTokens * 1.6)} tokens)`;
    log(
      `sending ${workload.length} streaming chat requests (${shared} share one of ${shape.sharedPrompts} system prompts of ${size}, ${workload.length - shared} unique), concurrency ${opts.concurrency}, seed ${opts.seed}`,
    );
    const passes: PassSummary[] = [
      await runPass('cacheroute (cache-aware)', envoy, fleet, workload, opts.concurrency, shape.deadlineMs, router),
    ];

    if (opts.baseline) {
      await fleet.reset();
      const rr = await startEnvoy({ variant: 'envoy-only-round-robin', name: 'demo-envoy-rr', listenerPort: 0, adminPort: 0, engines });
      envoys.push(rr);
      log('same workload through Envoy alone (round robin), engine caches reset');
      passes.push(await runPass('Envoy round robin', rr, fleet, workload, opts.concurrency, shape.deadlineMs));
    }
    process.stdout.write('\n');
    printSummary(passes, engines, workload.length);
    process.stdout.write(`\n(total ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
  } finally {
    await stopAll();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
