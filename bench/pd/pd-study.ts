/**
 * Prefill/decode disaggregation on the fleet simulator (virtual time, the real router's P/D
 * graph, gpu-like engines with their KV-transfer cost): where splitting pays, and whether the
 * decider skips it where it does not.
 *
 *   npx tsc -p tsconfig.json && nice -n 19 node dist/bench/pd/pd-study.js [--quick] [--out DIR]
 *
 * Two parts, both on the same requests and engines per seed:
 *  1. sweep (16 engines, every mix): the decider's settings (minUncachedTokens, the queue
 *     drain rate prefillTokensPerSecond, the absolute bound maxPrefillPendingTokens; the
 *     relative saturation rule is always on) against always-split and never-split. The
 *     setting with the best worst-case ratio to the better of always/never over the mixes
 *     (TTFT p50 and p99) is the measured default.
 *  2. fleets (8, 16, 32, 64 engines × mixes): aggregated cacheroute (every engine `both`,
 *     strategy cache-aware) against the P/D fleet (a quarter prefill engines, the rest decode)
 *     under always-split, never-split and the decider with the measured setting (the shipped
 *     defaults); the bar (decider no worse than both on TTFT p50 and p99) per mix and size.
 * Mixes: `short` (100–1,000-token prompts), `long` (2,000–8,000), `mixed` (75 % short chat
 * turns, 25 % long documents, half of those behind one of 20 shared 1,500-token prefixes).
 * Bounded: a fixed number of seeded-Poisson arrivals per run (30 per engine, 20 with --quick).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promptFromBlockIds } from '../../src/simulate/block-prompt.js';
import { ENGINE_MODEL_PROFILES } from '../../src/simulate/engine/profiles.js';
import { simulate } from '../../src/simulate/fleet-simulator.js';
import { pdContender, type PdHandlerParams } from '../../src/simulate/pd-contenders.js';
import type { Contender } from '../../src/simulate/policy.js';
import { routerContender } from '../../src/simulate/router-policy.js';
import type { RequestRecord, SimEngineSpec, SimRequest } from '../../src/simulate/types.js';
import { quantile } from '../../src/simulate/summary.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import { arg } from '../micro/cli-arg.js';
import { collectRunInfo } from '../report/run-info.js';
import { writeJson, writeJsonRuns } from '../report/result-files.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';

const BLOCK = 16;
const GPU = ENGINE_MODEL_PROFILES['gpu-like']!;
/** Arrivals per second per engine: prefill-heavy enough that a long cold prefill delays its neighbours. */
const QPS_PER_ENGINE = 1.6;

type Mix = 'short' | 'long' | 'mixed';
const MIXES: readonly Mix[] = ['short', 'long', 'mixed'];

const exp = (rng: Rng, mean: number): number => -Math.log(1 - rng.next()) * mean;
const logUniform = (rng: Rng, lo: number, hi: number): number => Math.round(lo * (hi / lo) ** rng.next());
const blocks = (base: number, n: number): number[] => Array.from({ length: n }, (_, i) => base + i);

function workload(mix: Mix, seed: number, n: number, qps: number): SimRequest[] {
  const rng = seededRng(seed * 7919 + MIXES.indexOf(mix));
  const cache = new Map<number, string>();
  const out: SimRequest[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += exp(rng, 1000 / qps);
    const long = mix === 'long' || (mix === 'mixed' && rng.next() < 0.25);
    const tokens = long ? logUniform(rng, 2000, 8000) : mix === 'mixed' ? logUniform(rng, 100, 600) : logUniform(rng, 100, 1000);
    const chain = long && rng.next() < 0.5 ? blocks(1_000_000 + rng.int(20) * 1000, 94) : [];
    out.push({
      id: `${mix[0]}${i}`,
      atMs: t,
      api: 'completions',
      prompt: promptFromBlockIds(chain, BLOCK, Math.max(tokens, chain.length * BLOCK + 50), i + 1, cache),
      outputTokens: 32 + rng.int(224),
    });
  }
  return out;
}

function aggregatedFleet(n: number): SimEngineSpec[] {
  return Array.from({ length: n }, () => ({ model: GPU, profile: 'gpu-like' }));
}

/** A quarter prefill engines (at least one), the rest decode. */
function pdFleet(n: number): SimEngineSpec[] {
  const p = Math.max(1, Math.round(n / 4));
  return Array.from({ length: n }, (_, i) => ({
    model: GPU,
    profile: 'gpu-like',
    role: i < p ? ('prefill' as const) : ('decode' as const),
  }));
}

interface Row {
  readonly part: 'sweep' | 'fleets';
  readonly mix: Mix;
  readonly engines: number;
  readonly contender: string;
  readonly handler?: PdHandlerParams;
  readonly seed: number;
  readonly requests: number;
  readonly failed: number;
  readonly ttftP50Ms: number;
  readonly ttftP99Ms: number;
  /** Per request (e2e − TTFT) / (tokens − 1); p50 and p99 over requests. */
  readonly itlP50Ms: number;
  readonly itlP99Ms: number;
  /** Output tokens per second of virtual time, first arrival to last end. */
  readonly outputTokensPerS: number;
  /** Requests whose prefill ran on a prefill engine. */
  readonly splitShare: number;
  readonly wallMs: number;
}

/** The simulator's nearest-rank quantile of unsorted values (sorts them in place). */
function quantileOf(xs: number[], q: number): number {
  return quantile(
    xs.sort((a, b) => a - b),
    q,
  );
}

function facts(
  records: readonly RequestRecord[],
  virtualMs: number,
): Pick<Row, 'itlP50Ms' | 'itlP99Ms' | 'outputTokensPerS' | 'splitShare'> {
  const itl: number[] = [];
  let tokens = 0;
  let split = 0;
  for (const r of records) {
    if (!r.ok) continue;
    const n = r.completionTokens ?? 0;
    tokens += n;
    if (n > 1) itl.push((r.e2eMs - r.ttftMs) / (n - 1));
    if (r.prefillEngine !== undefined) split++;
  }
  return {
    itlP50Ms: quantileOf([...itl], 0.5),
    itlP99Ms: quantileOf([...itl], 0.99),
    outputTokensPerS: virtualMs > 0 ? tokens / (virtualMs / 1000) : 0,
    splitShare: records.length > 0 ? split / records.length : 0,
  };
}

const ALWAYS = 'P/D always-split';
const NEVER = 'P/D never-split';
const DECIDER = 'P/D decider (measured)';

function handlerLabel(h: PdHandlerParams): string {
  const sat = h.maxPrefillPendingTokens === NO_BOUND ? '' : ` sat=${h.maxPrefillPendingTokens}`;
  return `decider N=${h.minUncachedTokens} M=${h.minPromptTokens} rate=${h.prefillTokensPerSecond}${sat}`;
}

/** No absolute bound on the prefill pick's queue: the relative rule alone. */
const NO_BOUND = 1_000_000;

function sweepSettings(quick: boolean): PdHandlerParams[] {
  const out: PdHandlerParams[] = [];
  const ns = quick ? [1024] : [256, 1024];
  const rates = quick ? [4000, 6500] : [4000, 6500, 10_000];
  for (const minUncachedTokens of ns)
    for (const prefillTokensPerSecond of rates)
      out.push({ split: 'auto', minUncachedTokens, minPromptTokens: 512, prefillTokensPerSecond, maxPrefillPendingTokens: NO_BOUND });
  // An absolute bound on top of the relative rule.
  for (const maxPrefillPendingTokens of quick ? [8192] : [4096, 8192, 16_384])
    out.push({ split: 'auto', minUncachedTokens: 1024, minPromptTokens: 512, prefillTokensPerSecond: 6500, maxPrefillPendingTokens });
  if (!quick)
    out.push({ split: 'auto', minUncachedTokens: 1024, minPromptTokens: 512, prefillTokensPerSecond: 4000, maxPrefillPendingTokens: 8192 });
  return out;
}

function run(
  part: Row['part'],
  mix: Mix,
  engines: number,
  c: Contender,
  fleet: SimEngineSpec[],
  seed: number,
  perEngine: number,
  handler?: PdHandlerParams,
): Row {
  const reqs = workload(mix, seed, perEngine * engines, QPS_PER_ENGINE * engines);
  const r = simulate(reqs, fleet, c, { seed, scrape: { intervalMs: 100 } });
  const first = reqs[0]?.atMs ?? 0;
  const row: Row = {
    part,
    mix,
    engines,
    contender: c.label,
    ...(handler !== undefined ? { handler } : {}),
    seed,
    requests: r.summary.requests,
    failed: r.summary.failed,
    ttftP50Ms: r.summary.ttftP50Ms,
    ttftP99Ms: r.summary.ttftP99Ms,
    ...facts(r.records, r.summary.virtualMs - first),
    wallMs: r.summary.wallMs,
  };
  process.stderr.write(
    `${part} ${mix} ${engines} seed ${seed} ${c.label}: p50 ${ms(row.ttftP50Ms)} p99 ${ms(row.ttftP99Ms)} itl ${row.itlP50Ms.toFixed(1)} split ${(100 * row.splitShare).toFixed(0)}% (${(row.wallMs / 1000).toFixed(1)} s)\n`,
  );
  return row;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const ms = (v: number): string => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`);

/** Median over seeds of a row field for one (part, mix, engines, contender). */
function med(rows: readonly Row[], part: Row['part'], mix: Mix, engines: number, contender: string, f: (r: Row) => number): number {
  return median(rows.filter((r) => r.part === part && r.mix === mix && r.engines === engines && r.contender === contender).map(f));
}

/** Worst ratio of a setting to the better of always/never, over mixes, on TTFT p50 and p99 (≤ 1 = no worse than both). */
function ratios(rows: readonly Row[], label: string, engines: number): { worst: number; mean: number } {
  let worst = 0;
  let sum = 0;
  let n = 0;
  for (const mix of MIXES) {
    for (const f of [(r: Row) => r.ttftP50Ms, (r: Row) => r.ttftP99Ms]) {
      const best = Math.min(med(rows, 'sweep', mix, engines, ALWAYS, f), med(rows, 'sweep', mix, engines, NEVER, f));
      const r = med(rows, 'sweep', mix, engines, label, f) / best;
      worst = Math.max(worst, r);
      sum += r;
      n++;
    }
  }
  return { worst, mean: sum / n };
}

function main(): void {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const out = arg(args, '--out') ?? join('bench', 'results', 'fleet-pd');
  const seeds = quick ? [1] : [1, 2];
  const perEngine = quick ? 20 : 30;
  const sizes = quick ? [8, 16] : [8, 16, 32, 64];
  const rows: Row[] = [];

  // 1. Sweep at 16 engines.
  const SWEEP_ENGINES = 16;
  const settings = sweepSettings(quick);
  for (const mix of MIXES) {
    for (const seed of seeds) {
      rows.push(run('sweep', mix, SWEEP_ENGINES, pdContender(ALWAYS, { split: 'always' }), pdFleet(SWEEP_ENGINES), seed, perEngine));
      rows.push(run('sweep', mix, SWEEP_ENGINES, pdContender(NEVER, { split: 'never' }), pdFleet(SWEEP_ENGINES), seed, perEngine));
      for (const h of settings)
        rows.push(run('sweep', mix, SWEEP_ENGINES, pdContender(handlerLabel(h), h), pdFleet(SWEEP_ENGINES), seed, perEngine, h));
    }
  }
  // Best worst ratio first; among equal worst ratios (the short mix pins many at 1.00: no split), the best mean ratio.
  const ranked = settings
    .map((h) => ({ h, ...ratios(rows, handlerLabel(h), SWEEP_ENGINES) }))
    .sort((a, b) => a.worst - b.worst || a.mean - b.mean);
  const chosen = ranked[0]!.h;

  // 2. Fleets.
  const fleetContenders: { c: Contender; pd: boolean }[] = [
    { c: routerContender('aggregated cache-aware', { document: { strategy: 'cache-aware' } }), pd: false },
    { c: pdContender(ALWAYS, { split: 'always' }), pd: true },
    { c: pdContender(NEVER, { split: 'never' }), pd: true },
    { c: pdContender(DECIDER, chosen), pd: true },
  ];
  for (const engines of sizes) {
    for (const mix of MIXES) {
      for (const seed of seeds) {
        for (const { c, pd } of fleetContenders)
          rows.push(run('fleets', mix, engines, c, pd ? pdFleet(engines) : aggregatedFleet(engines), seed, perEngine));
      }
    }
  }

  const info = collectRunInfo(REPO_ROOT);
  const meta = {
    kind: 'cacheroute-pd-study',
    commit: (info.gitCommit ?? '').slice(0, 7),
    dirty: info.gitDirty.length > 0,
    command: `nice -n 19 node dist/bench/pd/pd-study.js${quick ? ' --quick' : ''}`,
    seeds,
    requestsPerEngine: perEngine,
    qpsPerEngine: QPS_PER_ENGINE,
    engineProfile: 'gpu-like',
    kvTransfer: { latencyMs: GPU.kvTransferLatencyMs, bytesPerToken: GPU.kvBytesPerToken, gbps: GPU.kvTransferGBps },
    sweepEngines: SWEEP_ENGINES,
    chosen,
    ranking: ranked.map((r) => ({ ...r.h, worstRatio: r.worst, meanRatio: r.mean })),
  };
  mkdirSync(out, { recursive: true });
  writeJson(join(out, 'run.json'), { ...meta, info }, REPO_ROOT);
  writeJsonRuns(join(out, 'results.json'), { kind: meta.kind, commit: meta.commit }, 'rows', rows, REPO_ROOT);
  writeFileSync(
    join(out, 'study.md'),
    `${render(
      rows,
      meta,
      sizes,
      fleetContenders.map((f) => f.c.label),
      ranked,
    )}\n`,
  );
  process.stderr.write(`wrote ${join(out, 'study.md')}\n`);
}

function render(
  rows: readonly Row[],
  meta: Record<string, unknown>,
  sizes: readonly number[],
  labels: readonly string[],
  ranked: readonly { h: PdHandlerParams; worst: number; mean: number }[],
): string {
  const sweepN = meta['sweepEngines'] as number;
  const lines = [
    '# Prefill/decode disaggregation on the fleet simulator',
    '',
    `- commit \`${String(meta['commit'])}\`${meta['dirty'] === true ? ' (uncommitted changes)' : ''}, seeds ${(meta['seeds'] as number[]).join(', ')}; \`${String(meta['command'])}\``,
    `- engines: gpu-like (8B-on-H100 figures, not measured), KV transfer ${GPU.kvTransferLatencyMs} ms + ${GPU.kvBytesPerToken} B/token at ${GPU.kvTransferGBps} GB/s; ${QPS_PER_ENGINE} req/s per engine, ${String(meta['requestsPerEngine'])} requests per engine; P/D fleets: a quarter prefill engines, the rest decode; aggregated: every engine both, strategy cache-aware.`,
    '- figures: medians over seeds; ITL = per request (end − first token) / (tokens − 1), p50 / p99 over requests; throughput = output tokens per virtual second.',
    '',
    `## 1. Decider sweep (${sweepN} engines)`,
    '',
    'Worst ratio = the largest, over the three mixes and TTFT p50/p99, of the setting ÷ the better of always-split and never-split (≤ 1.00: no worse than both); mean ratio = the mean of those six.',
    '',
    '| setting | worst ratio | mean ratio | ' + MIXES.map((m) => `${m} p50 / p99`).join(' | ') + ' |',
    '| --- | --- | --- | ' + MIXES.map(() => '---').join(' | ') + ' |',
  ];
  const cell = (label: string, mix: Mix, part: Row['part'], n: number): string =>
    `${ms(med(rows, part, mix, n, label, (r) => r.ttftP50Ms))} / ${ms(med(rows, part, mix, n, label, (r) => r.ttftP99Ms))}`;
  for (const label of [ALWAYS, NEVER])
    lines.push(`| ${label} | — | — | ${MIXES.map((m) => cell(label, m, 'sweep', sweepN)).join(' | ')} |`);
  for (const r of ranked)
    lines.push(
      `| ${handlerLabel(r.h)} | ${r.worst.toFixed(2)} | ${r.mean.toFixed(3)} | ${MIXES.map((m) => cell(handlerLabel(r.h), m, 'sweep', sweepN)).join(' | ')} |`,
    );
  lines.push('', `Measured default (best worst ratio, then best mean ratio): \`${handlerLabel(ranked[0]!.h)}\`.`, '');
  lines.push('## 2. Fleets: aggregated vs P/D', '');
  for (const mix of MIXES) {
    lines.push(`### ${mix}`, '');
    lines.push(
      '| engines | contender | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | output tok/s | split | p50 ÷ aggregated | p99 ÷ aggregated | failed |',
    );
    lines.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const n of sizes) {
      const base50 = med(rows, 'fleets', mix, n, labels[0]!, (r) => r.ttftP50Ms);
      const base99 = med(rows, 'fleets', mix, n, labels[0]!, (r) => r.ttftP99Ms);
      for (const label of labels) {
        const m = (f: (r: Row) => number): number => med(rows, 'fleets', mix, n, label, f);
        const failed = rows
          .filter((r) => r.part === 'fleets' && r.mix === mix && r.engines === n && r.contender === label)
          .reduce((a, r) => a + r.failed, 0);
        lines.push(
          `| ${n} | ${label} | ${ms(m((r) => r.ttftP50Ms))} | ${ms(m((r) => r.ttftP99Ms))} | ${m((r) => r.itlP50Ms).toFixed(1)} ms | ${m((r) => r.itlP99Ms).toFixed(1)} ms | ${Math.round(m((r) => r.outputTokensPerS))} | ${(100 * m((r) => r.splitShare)).toFixed(0)}% | ${(m((r) => r.ttftP50Ms) / base50).toFixed(2)}× | ${(m((r) => r.ttftP99Ms) / base99).toFixed(2)}× | ${failed} |`,
        );
      }
    }
    lines.push('');
  }
  lines.push('## Bar: decider-on no worse than both always-split and never-split (TTFT p50 and p99)', '');
  lines.push('| mix | engines | p50 ÷ min(always, never) | p99 ÷ min(always, never) | met |', '| --- | --- | --- | --- | --- |');
  for (const mix of MIXES) {
    for (const n of sizes) {
      const ratio = (f: (r: Row) => number): number =>
        med(rows, 'fleets', mix, n, DECIDER, f) / Math.min(med(rows, 'fleets', mix, n, ALWAYS, f), med(rows, 'fleets', mix, n, NEVER, f));
      const r50 = ratio((r) => r.ttftP50Ms);
      const r99 = ratio((r) => r.ttftP99Ms);
      lines.push(`| ${mix} | ${n} | ${r50.toFixed(2)}× | ${r99.toFixed(2)}× | ${r50 <= 1 && r99 <= 1 ? 'yes' : 'no'} |`);
    }
  }
  return lines.join('\n');
}

main();
