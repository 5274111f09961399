/**
 * The predicted-TTFT presets against the current default on the fleet simulator (virtual
 * time, the real router's plugin graph): agentic sessions, a hot prefix and mixed prompt
 * lengths at high load on 16 engines (and 64), a heterogeneous fleet where one engine is
 * twice as slow, agentic with stale engine numbers, and the fleet seed table's 50% cell.
 * Every contender sees the same requests and engines per seed; the ratios to the default
 * (cache-aware on the shipped access-log path) are the comparison.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/ttft/ttft-study.js [--quick] [--seeds 1,2] [--scenario NAME[,NAME…]]
 *     [--contenders 0,1] [--picker-params JSON] [--model-params JSON] [--dump-records] [--out DIR]
 *
 * Contenders: cache-aware on the access log (the shipped default); predicted-ttft on the
 * access log (it learns from the entry's first-token time), the same without its future-reuse
 * pricing and waiting floor (the greedy pick of c34bf72), and with responses through the
 * router (it also hears first tokens as they happen); sticky-until-saturated on the access
 * log; the simulator's oracle (exact engine caches and queues, least predicted TTFT, greedy).
 * Engines: the simulator's `gpu-like` profile, whose costs differ from the TTFT model's
 * priors (the CPU engine), so the model has to learn them; the TTFT presets are written out
 * as their graphs with ttft-model's maxNumSeqs set to the engines' 64.
 *
 * Bounded: a fixed number of arrivals per run (seeded Poisson), each run a few seconds of CPU.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promptFromBlockIds } from '../../src/simulate/block-prompt.js';
import type { EngineModelConfig } from '../../src/simulate/engine/batching-engine.js';
import { ENGINE_MODEL_PROFILES } from '../../src/simulate/engine/profiles.js';
import { simulate } from '../../src/simulate/fleet-simulator.js';
import { contender } from '../../src/simulate/contenders.js';
import { routerContender } from '../../src/simulate/router-policy.js';
import type { Contender } from '../../src/simulate/policy.js';
import type { RequestRecord, ScrapeModel, SimEngineSpec, SimRequest } from '../../src/simulate/types.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { simRequests } from '../fleet/sim-requests.js';
import { kvBlocksFor } from '../presets/building-blocks.js';
import { buildWorkload, type ScenarioSpec } from '../workloads/scenario.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import { arg } from '../micro/cli-arg.js';
import { collectRunInfo } from '../report/run-info.js';
import { writeJson, writeJsonRuns } from '../report/result-files.js';

const BLOCK = 16;
const GPU = ENGINE_MODEL_PROFILES['gpu-like']!;

function exp(rng: Rng, mean: number): number {
  return -Math.log(1 - rng.next()) * mean;
}

function zipf(rng: Rng, n: number, s: number): number {
  let total = 0;
  for (let i = 1; i <= n; i++) total += 1 / i ** s;
  let u = rng.next() * total;
  for (let i = 1; i <= n; i++) {
    u -= 1 / i ** s;
    if (u <= 0) return i - 1;
  }
  return n - 1;
}

const blocks = (base: number, n: number): number[] => Array.from({ length: n }, (_, i) => base + i);

/** Tool-using agent sessions: a tenant's system prompt, then turns that resend the growing history. */
function agentic(seed: number, sessions: number, sessionsPerS: number): SimRequest[] {
  const rng = seededRng(seed);
  const cache = new Map<number, string>();
  const out: SimRequest[] = [];
  let t = 0;
  let tail = 1;
  for (let s = 0; s < sessions; s++) {
    t += exp(rng, 1000 / sessionsPerS);
    const tenant = zipf(rng, 12, 1.1);
    const chain = blocks(1_000_000 + tenant * 1000, 125); // 2,000-token system prompt
    const turns = 3 + rng.int(4);
    let prev: string | undefined;
    for (let k = 0; k < turns; k++) {
      chain.push(...blocks(10_000_000 + s * 1000 + k * 50, 10 + rng.int(30))); // 160–640 tokens of task / tool result
      const id = `a${s}-${k}`;
      out.push({
        id,
        atMs: t,
        api: 'completions',
        prompt: promptFromBlockIds(chain, BLOCK, chain.length * BLOCK, tail++, cache),
        outputTokens: 32 + rng.int(96),
        session: `s${s}`,
        ...(prev !== undefined ? { dependsOn: { afterId: prev, thinkMs: 100 + rng.int(400) } } : {}),
      });
      prev = id;
    }
  }
  return out;
}

/** Independent requests at seeded Poisson arrivals; `shape` gives each one's block chain, length and output. */
function poisson(
  seed: number,
  n: number,
  qps: number,
  prefix: string,
  shape: (rng: Rng) => { chain: number[]; tokens: number; outputTokens: number },
): SimRequest[] {
  const rng = seededRng(seed);
  const cache = new Map<number, string>();
  const out: SimRequest[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += exp(rng, 1000 / qps);
    const { chain, tokens, outputTokens } = shape(rng);
    out.push({
      id: `${prefix}${i}`,
      atMs: t,
      api: 'completions',
      prompt: promptFromBlockIds(chain, BLOCK, tokens, i + 1, cache),
      outputTokens,
    });
  }
  return out;
}

/** 60 % of requests share one 3,000-token prefix; the rest one of 200 Zipf-popular 1,500-token prefixes. */
function hotPrefix(seed: number, n: number, qps: number): SimRequest[] {
  return poisson(seed, n, qps, 'h', (rng) => {
    const chain = rng.next() < 0.6 ? blocks(2_000_000, 188) : blocks(3_000_000 + zipf(rng, 200, 1) * 1000, 94);
    return { chain, tokens: chain.length * BLOCK + 100 + rng.int(200), outputTokens: 64 };
  });
}

/** Prompt lengths log-uniform from 100 to 8,000 tokens; half open with one of 20 shared prefixes of 1,000 tokens. */
function mixedLengths(seed: number, n: number, qps: number): SimRequest[] {
  return poisson(seed, n, qps, 'm', (rng) => {
    const tokens = Math.round(100 * 80 ** rng.next());
    const chain = rng.next() < 0.5 && tokens > 1000 ? blocks(4_000_000 + rng.int(20) * 1000, 62) : [];
    return { chain, tokens, outputTokens: 16 + rng.int(200) };
  });
}

function slower(m: EngineModelConfig, factor: number): EngineModelConfig {
  return {
    ...m,
    stepOverheadMs: m.stepOverheadMs * factor,
    prefillMsPerToken: m.prefillMsPerToken * factor,
    decodeMsPerSeq: m.decodeMsPerSeq * factor,
    prefillContextMsPerKToken: m.prefillContextMsPerKToken * factor,
    decodeContextMsPerKToken: m.decodeContextMsPerKToken * factor,
  };
}

function fleet(n: number, slowOne = false, kvBlocks?: number): SimEngineSpec[] {
  const base = kvBlocks === undefined ? GPU : { ...GPU, kvCacheBlocks: kvBlocks };
  return Array.from({ length: n }, (_, i) => ({
    model: slowOne && i === 0 ? slower(base, 2) : base,
    profile: slowOne && i === 0 ? 'gpu-like x2 slow' : 'gpu-like',
  }));
}

const EXT_PROC = 'ext-proc' as const;

/** The fleet seed table's KV size (bench/fleet/studies.ts: 1.25 × an engine's share of the groups + 4 running prompts). */
const SEED_KV_BLOCKS = kvBlocksFor({ hotSetTokens: 8 * 1536, engines: 1, factor: 1.25, inflightTokens: 4 * 1536 });

/** One cell of the fleet seed table (bench/fleet/studies.ts `sharing`): `ratio` of every 1,536-token prompt shared by one of 8 groups per engine. */
function seedTableCell(ratio: number, engines: number, seed: number): SimRequest[] {
  const spec: ScenarioSpec = {
    kind: 'sharing-ratio',
    label: `sharing-${Math.round(ratio * 100)}`,
    ratio,
    promptTokens: 1536,
    groups: 8 * engines,
    requests: Math.max(240, 60 * engines),
    outputTokens: 32,
    warmupPerGroup: 1,
    warmupQps: 3 * engines,
    arrival: { kind: 'poisson', qps: 1.5 * engines },
  };
  return simRequests(buildWorkload(spec, seed, REPO_ROOT));
}

/**
 * A TTFT preset written out as its plugin graph, with the ttft-model told the engines'
 * --max-num-seqs (the simulator's gpu-like engines run 64; the parameter's default is vLLM's 256).
 */
function ttftGraph(
  name: string,
  picker: string,
  pickerParams: Record<string, unknown> = {},
  modelParams: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    plugins: [
      { type: 'model-subset-filter' },
      { type: 'health-filter' },
      { type: 'prefix-cache' },
      { type: 'ttft-model', parameters: { maxNumSeqs: GPU.maxNumSeqs, ...modelParams } },
      { type: picker, parameters: pickerParams },
      { type: 'index-calibration', parameters: { prefixPlugin: 'prefix-cache' } },
    ],
    schedulingProfiles: [
      {
        name,
        plugins: [
          { pluginRef: 'model-subset-filter' },
          { pluginRef: 'health-filter' },
          { pluginRef: 'prefix-cache', weight: 1 },
          { pluginRef: picker },
        ],
      },
    ],
  };
}

/** The contenders; `pickerParams` override the predicted-ttft picker's parameters (for sweeps). */
function contenders(pickerParams: Record<string, unknown>, modelParams: Record<string, unknown>, scrape: ScrapeModel): Contender[] {
  const ttft = ttftGraph('predicted-ttft', 'predicted-ttft', pickerParams, modelParams);
  const sticky = ttftGraph('sticky-until-saturated', 'sticky-until-saturated-picker', {}, modelParams);
  // The preset before future-reuse pricing (c34bf72): greedy on the prediction, no waiting floor.
  const greedy = ttftGraph(
    'predicted-ttft',
    'predicted-ttft',
    { reuseWeight: 0, evictionWeight: 0, reuseQueueWeight: 0, ...pickerParams },
    { stallKvUsage: 1, ...modelParams },
  );
  return [
    routerContender('cache-aware (default, access log)', { document: { strategy: 'cache-aware' }, scrape }),
    routerContender('predicted-ttft (access log)', { document: ttft, scrape }),
    routerContender('predicted-ttft greedy, no reuse pricing (access log)', { document: greedy, scrape }),
    routerContender('predicted-ttft (responses via router)', { document: ttft, responsePath: EXT_PROC, scrape }),
    routerContender('sticky-until-saturated (access log)', { document: sticky, scrape }),
    contender('oracle'),
  ];
}

/** Engine numbers as the seed table reads them: every 100 ms ± 10 %, 2 ms old. */
const FRESH: ScrapeModel = { intervalMs: 100, jitterMs: 10, delayMs: 2 };

interface Scenario {
  readonly name: string;
  readonly engines: number;
  readonly slowOne: boolean;
  /** KV blocks per engine (default the gpu-like profile's 4,096). */
  readonly kvBlocks?: number;
  /** Scrape model (default every 100 ms, fresh). */
  readonly scrape?: ScrapeModel;
  readonly requests: (seed: number) => SimRequest[];
  readonly load: string;
}

function scenarios(quick: boolean): Scenario[] {
  const k = quick ? 0.25 : 1;
  const n = (x: number): number => Math.round(x * k);
  return [
    { name: 'agentic-16', engines: 16, slowOne: false, load: '40 sessions/s', requests: (s) => agentic(s, n(1600), 40) },
    { name: 'hot-prefix-16', engines: 16, slowOne: false, load: '40 req/s', requests: (s) => hotPrefix(s, n(3000), 40) },
    { name: 'mixed-lengths-16', engines: 16, slowOne: false, load: '30 req/s', requests: (s) => mixedLengths(s, n(3000), 30) },
    { name: 'agentic-16-one-2x-slow', engines: 16, slowOne: true, load: '40 sessions/s', requests: (s) => agentic(s, n(1600), 40) },
    {
      name: 'agentic-16-stale-metrics',
      engines: 16,
      slowOne: false,
      load: '40 sessions/s, scrapes every 2 s and 1 s old',
      scrape: { intervalMs: 2000, jitterMs: 200, delayMs: 1000 },
      requests: (s) => agentic(s, n(1600), 40),
    },
    {
      name: 'sharing-50-16',
      engines: 16,
      slowOne: false,
      kvBlocks: SEED_KV_BLOCKS,
      load: 'the fleet seed table 50% cell: 1.5 req/s per engine',
      requests: (s) => seedTableCell(0.5, 16, s),
    },
    { name: 'agentic-64', engines: 64, slowOne: false, load: '160 sessions/s', requests: (s) => agentic(s, n(4000), 160) },
    { name: 'hot-prefix-64', engines: 64, slowOne: false, load: '160 req/s', requests: (s) => hotPrefix(s, n(12000), 160) },
    {
      name: 'agentic-64-one-2x-slow',
      engines: 64,
      slowOne: true,
      load: '160 sessions/s',
      requests: (s) => agentic(s, n(4000), 160),
    },
    {
      name: 'sharing-50-64',
      engines: 64,
      slowOne: false,
      kvBlocks: SEED_KV_BLOCKS,
      load: 'the fleet seed table 50% cell: 1.5 req/s per engine',
      requests: (s) => seedTableCell(0.5, 64, s),
    },
  ];
}

interface RunRow {
  readonly scenario: string;
  readonly contender: string;
  readonly seed: number;
  readonly requests: number;
  readonly failed: number;
  readonly hitRate: number;
  readonly ttftP50Ms: number;
  readonly ttftP99Ms: number;
  readonly decisionP99Micros: number;
  /** Engine 0's share of the uncached prefill tokens (the slow one in the heterogeneous fleet). */
  readonly engine0PrefillShare: number;
  /**
   * The TTFT model's online prediction error: the median over engines of each engine's median
   * absolute percentage error (issue #27's accuracy bar, per engine on real vLLM); null for a
   * contender without a ttft-model.
   */
  readonly medianApe: number | null;
}

/** The first replica's ttft-model debug state (its per-engine statistics), if the policy has one. */
function ttftModelState(policy: unknown): { engines?: { medianAbsPctError?: number }[] } | undefined {
  const states = (policy as { schedulers?: { pluginStates(): { name: string; state: unknown }[] }[] }).schedulers?.[0]?.pluginStates();
  return states?.find((p) => p.name === 'ttft-model')?.state as { engines?: { medianAbsPctError?: number }[] } | undefined;
}

/** Median over engines of the first replica's ttft-model per-engine median APE, or null. */
function modelMedianApe(policy: unknown): number | null {
  const apes = (ttftModelState(policy)?.engines ?? []).map((e) => e.medianAbsPctError).filter((v): v is number => v !== undefined);
  return apes.length === 0 ? null : median(apes);
}

function prefillShare(records: readonly RequestRecord[]): number {
  let all = 0;
  let e0 = 0;
  for (const r of records) {
    if (!r.ok) continue;
    const u = Math.max(0, r.promptTokens - r.cachedTokens);
    all += u;
    if (r.engine === 0) e0 += u;
  }
  return all > 0 ? e0 / all : 0;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

const ms = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`);

/** The median over seeds of the rows' prediction error, or – without a TTFT model. */
function apeCell(rows: readonly RunRow[]): string {
  const v = rows.map((r) => r.medianApe).filter((x): x is number => x !== null && x !== undefined);
  return v.length === 0 ? '–' : `${(100 * median(v)).toFixed(1)}%`;
}

function render(
  rows: readonly RunRow[],
  meta: Record<string, unknown>,
  scen: readonly Scenario[],
  CONTENDERS: readonly Contender[],
): string {
  const lines = [
    '# Predicted TTFT on the fleet simulator',
    '',
    ...(meta['partial'] === true ? ['**Partial**: the run was cut short; the scenarios below are complete.', ''] : []),
    `- commit \`${String(meta['commit'])}\`${meta['dirty'] === true ? ' (uncommitted changes)' : ''}, seeds ${(meta['seeds'] as number[]).join(', ')}; \`node dist/bench/ttft/ttft-study.js${meta['quick'] === true ? ' --quick' : ''} --seeds ${(meta['seeds'] as number[]).join(',')}\``,
    "- engines: the simulator's `gpu-like` profile (not the TTFT model's CPU-engine priors); virtual time, the real router graph.",
    '- ratios: median over seeds of (contender ÷ the default, cache-aware on the access log) per seed; p50 / p99 are medians over seeds.',
    '',
  ];
  for (const sc of scen) {
    const sub = rows.filter((r) => r.scenario === sc.name);
    if (sub.length === 0) continue;
    lines.push(`## ${sc.name} (${sc.engines} engines${sc.slowOne ? ', engine 0 twice as slow' : ''}, ${sc.load})`, '');
    lines.push(
      '| contender | TTFT p50 | TTFT p99 | p50 ÷ default | p99 ÷ default | hit rate | decision p99 µs | engine 0 prefill share | prediction error (median APE) | failed |',
    );
    lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const c of CONTENDERS) {
      const mine = sub.filter((r) => r.contender === c.label);
      const ratio = (f: (r: RunRow) => number): number =>
        median(mine.map((r) => f(r) / f(sub.find((b) => b.seed === r.seed && b.contender === CONTENDERS[0]!.label)!)));
      lines.push(
        `| ${c.label} | ${ms(median(mine.map((r) => r.ttftP50Ms)))} | ${ms(median(mine.map((r) => r.ttftP99Ms)))} | ${ratio((r) => r.ttftP50Ms).toFixed(2)}× | ${ratio((r) => r.ttftP99Ms).toFixed(2)}× | ${(100 * median(mine.map((r) => r.hitRate))).toFixed(1)}% | ${median(mine.map((r) => r.decisionP99Micros)).toFixed(0)} | ${(100 * median(mine.map((r) => r.engine0PrefillShare))).toFixed(1)}% | ${apeCell(mine)} | ${mine.reduce((a, r) => a + r.failed, 0)} |`,
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}

function main(): void {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const out = arg(args, '--out') ?? join('bench', 'results', 'ttft-fleet');
  const only = arg(args, '--scenario');
  const debug = args.includes('--debug-states');
  const seedArg = arg(args, '--seeds');
  const seeds = seedArg !== undefined ? seedArg.split(',').map(Number) : quick ? [1] : [1, 2, 3];
  const names = only?.split(',');
  const scen = scenarios(quick).filter((s) => names === undefined || names.includes(s.name));
  const pickerParams = JSON.parse(arg(args, '--picker-params') ?? '{}') as Record<string, unknown>;
  const onlyContenders = arg(args, '--contenders')?.split(',').map(Number);
  const modelParams = JSON.parse(arg(args, '--model-params') ?? '{}') as Record<string, unknown>;
  const pick = (scrape: ScrapeModel): Contender[] => {
    const all = contenders(pickerParams, modelParams, scrape);
    return onlyContenders === undefined ? all : all.filter((_, i) => onlyContenders.includes(i));
  };
  const CONTENDERS = pick(FRESH);
  const rows: RunRow[] = [];
  mkdirSync(out, { recursive: true });
  const info = collectRunInfo(REPO_ROOT);
  const commit = (info.gitCommit ?? '').slice(0, 7);
  const dirty = info.gitDirty.length > 0;
  /** Written after every scenario, so a run cut short keeps what it measured (`partial`). */
  const write = (done: readonly Scenario[], partial: boolean): void => {
    const meta = {
      kind: 'cacheroute-ttft-study',
      commit,
      dirty,
      partial,
      seeds,
      quick,
      pickerParams,
      modelParams,
      scenarios: done.map((s) => ({ ...s, requests: undefined })),
    };
    writeJson(join(out, 'run.json'), { ...meta, info }, REPO_ROOT);
    writeJsonRuns(join(out, 'results.json'), { kind: meta.kind, commit, partial }, 'rows', rows, REPO_ROOT);
    writeFileSync(join(out, 'study.md'), `${render(rows, meta, done, CONTENDERS)}\n`);
  };
  for (const [k, sc] of scen.entries()) {
    for (const seed of seeds) {
      const requests = sc.requests(seed);
      for (const c0 of pick(sc.scrape ?? FRESH)) {
        let policy: unknown;
        const c: Contender = { ...c0, create: (ctx, replicas) => (policy = c0.create(ctx, replicas)) as ReturnType<Contender['create']> };
        const r = simulate(requests, fleet(sc.engines, sc.slowOne, sc.kvBlocks), c, { seed });
        if (debug) {
          const m = ttftModelState(policy);
          if (m !== undefined) process.stderr.write(`${JSON.stringify((m.engines ?? []).slice(0, 3))}\n`);
        }
        if (args.includes('--dump-records')) {
          const slug = c.label.replace(/[^a-z0-9]+/gi, '-');
          writeFileSync(join(out, `records-${sc.name}-${seed}-${slug}.json`), JSON.stringify(r.records));
        }
        const row: RunRow = {
          scenario: sc.name,
          contender: c.label,
          seed,
          requests: r.summary.requests,
          failed: r.summary.failed,
          hitRate: r.summary.hitRate,
          ttftP50Ms: r.summary.ttftP50Ms,
          ttftP99Ms: r.summary.ttftP99Ms,
          decisionP99Micros: r.summary.decisionP99Micros,
          engine0PrefillShare: prefillShare(r.records),
          medianApe: modelMedianApe(policy),
        };
        rows.push(row);
        process.stderr.write(
          `${sc.name} seed ${seed} ${c.label}: p50 ${ms(row.ttftP50Ms)} p99 ${ms(row.ttftP99Ms)} hit ${(100 * row.hitRate).toFixed(1)}%\n`,
        );
      }
    }
    write(scen.slice(0, k + 1), k + 1 < scen.length);
  }
  process.stderr.write(`wrote ${join(out, 'study.md')}\n`);
}

main();
