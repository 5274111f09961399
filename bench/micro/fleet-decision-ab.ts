/**
 * Decision cost of this build against another commit's, side by side in one process: the
 * fleet-decision-cost setup (`cacheroute serve` defaults, scraped engine samples, warm
 * ~100k-block index, 32 KB chat prompts, 64 in flight; decision-bench.ts) built once per
 * build, then batches of decisions alternated between the two (ABAB, BABA, …).
 *
 * Why one process and alternated batches: on a shared 2-core machine the load moves by the
 * minute, so two runs minutes apart compare the neighbours more than the builds. Alternated
 * batches see the same noise; the batch-by-batch ratios' median is the figure to quote. The
 * base commit is exported (`git archive`) to a temporary directory and compiled there.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/micro/fleet-decision-ab.js --base <commit> [--endpoints 1024] [--batches 30] [--batch 125]
 *     [--strategy cache-aware] [--head-first]
 *
 * `--strategy` names the preset both builds run (default: the serve default, cache-aware); the
 * base commit must know it.
 *
 * Setup order: the build set up second measures slower. With both builds the same commit
 * (1,024 endpoints, predicted-ttft, 60 × 125 decisions) the median batch ratio at p50 was
 * 1.10 with the base set up first (the default) and 0.87 with `--head-first`. Below ~10% a
 * ratio means something only from both orders: quote their geometric mean.
 *
 * Prints one JSON object (this build = B). Bounded: 2 × (warm-up + batches × batch) decisions.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RouteTicket } from '../../src/core/routing-service.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { arg } from './cli-arg.js';
import { PRESET_NAMES } from '../../src/plugins/presets/presets.js';

interface Build {
  /** Routes `n` more requests; their decision and route micros. */
  run(n: number): { decision: number[]; route: number[]; cold: number[] };
}

/** The decision benchmark's router and workload from the build under `root` (its dist/). */
async function setup(root: string, endpoints: number, strategy: string | undefined): Promise<Build> {
  const mod = async (p: string): Promise<Record<string, unknown>> =>
    (await import(pathToFileURL(join(root, 'dist', p)).href)) as Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: another build's modules, typed by this build's shapes below
  const any = (x: unknown): any => x;
  const db = any(await mod('bench/micro/decision-bench.js'));
  const { createScheduler } = any(await mod('src/compose/create-scheduler.js'));
  const { EngineSamples } = any(await mod('bench/micro/engine-samples.js'));
  const { ChatWorkload } = any(await mod('bench/micro/chat-workload.js'));
  const { systemClock } = any(await mod('src/util/clock.js'));
  const { seededRng } = any(await mod('src/util/rng.js'));
  const { PREFIX_INDEX } = any(await mod('src/plugins/multi/prefix-cache-plugin.js'));
  const o = { ...db.DEFAULT_DECISION_BENCH, endpoints, serveDefaults: true, ...(strategy !== undefined ? { strategy } : {}) };
  const config = db.decisionBenchConfig(o);
  const s = createScheduler(config, { clock: systemClock, rng: seededRng(o.seed) });
  const index = s.service(PREFIX_INDEX);
  const scrapes = new EngineSamples(s, config, o.seed);
  const wl = new ChatWorkload({ seed: o.seed, ...o.workload });
  const open: RouteTicket[] = [];
  const whole: number[] = [];
  s.onDecision((e: { kind: string; routeMicros: number }) => {
    if (e.kind === 'routed') whole.push(e.routeMicros);
  });
  let seq = 0;
  // decision-bench.ts's route step, written here rather than imported: both builds must run
  // the same harness, and a base commit has only its own copy of it.
  const route = (prompt: string): RouteTicket => {
    const t: RouteTicket = s.route({
      requestId: `r${seq++}`,
      model: 'bench-model',
      prefix: prompt,
      promptChars: prompt.length,
      promptTokens: Math.ceil(prompt.length / config.requests.charsPerToken),
      stream: true,
      arrivalMs: systemClock.nowMs(),
    });
    open.push(t);
    scrapes.tick();
    if (open.length > o.inflightWindow) open.splice(Math.floor(open.length / 3), 1)[0]!.finish({ aborted: false, status: 200 });
    return t;
  };
  // The warm-up of decision-bench.ts: every conversation, random traffic to a warm index, warmRoutes more.
  for (let c = 0; c < o.workload.conversations && index.stats().blocks < o.warmBlocks; c++) route(wl.conversation(c));
  for (let k = 0; k < 20_000 && index.stats().blocks < o.warmBlocks; k++) route(wl.next().prompt);
  for (let k = 0; k < o.warmRoutes; k++) route(wl.next().prompt);
  return {
    run(n) {
      const decision: number[] = [];
      const cold: number[] = [];
      whole.length = 0;
      for (let k = 0; k < n; k++) {
        const d = route(wl.next().prompt).decision;
        decision.push(d.decisionMicros);
        if (d.reason === 'cold') cold.push(d.decisionMicros);
      }
      return { decision, route: [...whole], cold };
    },
  };
}

function quantile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}

/** This build's commit, marked when the tree has uncommitted changes (then B is not that commit). */
function headLabel(): string {
  const git = (a: string[]): string => execFileSync('git', a, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  return `${git(['rev-parse', '--short', 'HEAD'])}${git(['status', '--porcelain']) === '' ? '' : '-dirty'}`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const base = arg(args, '--base');
  if (base === undefined) throw new Error('--base <commit> is required');
  const endpoints = Number(arg(args, '--endpoints') ?? 1024);
  const batches = Math.max(2, Math.min(200, Number(arg(args, '--batches') ?? 30)));
  const batch = Math.max(10, Math.min(1000, Number(arg(args, '--batch') ?? 125)));
  if (!Number.isInteger(endpoints) || endpoints < 1 || endpoints > 4096) throw new Error('--endpoints: an integer 1..4096');
  const strategy = arg(args, '--strategy');
  if (strategy !== undefined && !(PRESET_NAMES as readonly string[]).includes(strategy))
    throw new Error(`--strategy: unknown preset ${strategy}`);
  const dir = mkdtempSync(join(tmpdir(), 'cacheroute-ab-'));
  try {
    const tar = execFileSync('git', ['archive', '--format=tar', base], { cwd: REPO_ROOT, maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', dir], { input: tar });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'));
    execFileSync(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], {
      cwd: dir,
      stdio: 'inherit',
    });
    const loadAtStart = loadavg();
    // Which build is set up first matters (see the header): --head-first swaps the order.
    const headFirst = args.includes('--head-first');
    const b0 = headFirst ? await setup(REPO_ROOT, endpoints, strategy) : undefined;
    const a = await setup(dir, endpoints, strategy);
    const b = b0 ?? (await setup(REPO_ROOT, endpoints, strategy));
    const all = {
      A: { decision: [] as number[], route: [] as number[], cold: [] as number[] },
      B: { decision: [] as number[], route: [] as number[], cold: [] as number[] },
    };
    const ratios = { p50: [] as number[], p99: [] as number[], routeP50: [] as number[] };
    for (let k = 0; k < batches; k++) {
      const order: ['A' | 'B', Build][] =
        k % 2 === 0
          ? [
              ['A', a],
              ['B', b],
            ]
          : [
              ['B', b],
              ['A', a],
            ];
      const got: Record<string, ReturnType<Build['run']>> = {};
      for (const [name, build] of order) {
        const r = build.run(batch);
        got[name] = r;
        all[name].decision.push(...r.decision);
        all[name].route.push(...r.route);
        all[name].cold.push(...r.cold);
      }
      ratios.p50.push(quantile(got.B!.decision, 0.5) / quantile(got.A!.decision, 0.5));
      ratios.p99.push(quantile(got.B!.decision, 0.99) / quantile(got.A!.decision, 0.99));
      ratios.routeP50.push(quantile(got.B!.route, 0.5) / quantile(got.A!.route, 0.5));
    }
    const summary = (x: (typeof all)['A']) => ({
      decisionP50: Math.round(quantile(x.decision, 0.5)),
      decisionP90: Math.round(quantile(x.decision, 0.9)),
      decisionP99: Math.round(quantile(x.decision, 0.99)),
      routeP50: Math.round(quantile(x.route, 0.5)),
      routeP99: Math.round(quantile(x.route, 0.99)),
      coldDecisions: x.cold.length,
      coldP50: Math.round(quantile(x.cold, 0.5)),
    });
    const round2 = (v: number): number => Math.round(v * 100) / 100;
    const out = {
      base,
      head: headLabel(),
      strategy: strategy ?? 'cache-aware',
      setUpFirst: headFirst ? 'B' : 'A',
      endpoints,
      batches,
      batch,
      loadAvgAtStart: loadAtStart.map(round2),
      loadAvgAtEnd: loadavg().map(round2),
      A: summary(all.A),
      B: summary(all.B),
      medianBatchRatio: {
        decisionP50: round2(quantile(ratios.p50, 0.5)),
        decisionP99: round2(quantile(ratios.p99, 0.5)),
        routeP50: round2(quantile(ratios.routeP50, 0.5)),
      },
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
