/**
 * `load-calibration`: engines whose KV cache is far smaller than the router's index
 * assumes. The router keeps predicting hits the engines already evicted; index
 * calibration (src/plugins/multi/index-calibration.ts) should bring the predicted-hit
 * accuracy back to ≥ 90% within one minute of traffic.
 *
 * Why in-process and not through Envoy: the quantity measured is the router's own
 * prediction accuracy over time, which lives in the scheduler; so this drives the
 * scheduling core (createScheduler, the real plugins) directly against real simulated
 * engines over HTTP — route, send to the chosen engine, finish the ticket with the
 * engine's usage — and samples the index-calibration plugin's stats every 5 s. The edge is not involved.
 *
 * Arms (same engines, reset between arms, same seeded workload):
 *   off         calibration disabled, index capacity as configured (31,250 blocks)
 *   remove-only unconfirmed blocks removed, capacity left as configured
 *   outcomes    calibration from usage.cached_tokens only (removal + capacity AIMD; no engine metrics)
 *   engine-size index sized from cache_config_info (metrics polled) + outcome calibration
 *
 *   node dist/bench/presets/load-calibration.js [--out bench/results/load-calibration] [--seconds 90]
 */
import { Agent, request as httpRequest } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultConfig, type DeepPartial } from '../../src/config/default-config.js';
import type { RouterConfig } from '../../src/config/types.js';
import type { RouteRequest } from '../../src/core/types.js';
import { IndexCalibration } from '../../src/plugins/multi/index-calibration.js';
import type { Scheduler } from '../../src/scheduling/scheduler.js';
import { createScheduler } from '../../src/compose/create-scheduler.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng } from '../../src/util/rng.js';
import { REPO_ROOT } from '../../test/helpers/repo-paths.js';
import { resetEngines, startEngineFleet } from '../harness/engines.js';
import type { EngineHandle } from '../contenders/types.js';
import { collectRunInfo } from '../report/run-info.js';
import { sharedPrefixWorkload } from '../workloads/shared-prefix.js';
import type { BenchRequest } from '../workloads/types.js';
import { BENCH_MODEL, ENGINE_MODEL_FLAGS } from './building-blocks.js';

export const CALIBRATION_SETUP = {
  engines: 4,
  /** 320 blocks × 16 tokens = 5,120 tokens per engine: about 4 of the 48 system prompts. */
  kvBlocks: 320,
  groups: 48,
  systemPromptTokens: 1024,
  questionTokens: 128,
  outputTokens: 8,
  qps: 8,
  seed: 1,
  sampleEveryMs: 10_000,
} as const;

export type Arm = 'off' | 'remove-only' | 'outcomes' | 'engine-size';
export const ARMS: readonly Arm[] = ['off', 'remove-only', 'outcomes', 'engine-size'];

function armConfig(arm: Arm, engines: readonly EngineHandle[]): RouterConfig {
  const over: DeepPartial<RouterConfig> = {
    strategy: 'cache-aware',
    seed: CALIBRATION_SETUP.seed,
    endpoints: engines.map((e) => ({ address: e.address })),
    engineMetrics: { enabled: arm === 'engine-size', pollIntervalMs: 100, staleAfterMs: 1000, timeoutMs: 500 },
    load: { calibration: { enabled: arm !== 'off', sizeFromEngine: arm === 'engine-size', adaptCapacity: arm !== 'remove-only' } },
  };
  return defaultConfig(over);
}

export interface Sample {
  readonly atS: number;
  readonly requests: number;
  /** Judged predictions and confirmations in this interval. */
  readonly judged: number;
  readonly confirmed: number;
  readonly intervalAccuracy: number | null;
  /** Accuracy over the calibration window (last `accuracyWindow` judged predictions). */
  readonly windowAccuracy: number | null;
  readonly meanIndexCapacityBlocks: number;
  /** Engine-confirmed token hit rate of the interval (cached ÷ prompt tokens). */
  readonly engineHitRate: number | null;
}

export interface ArmResult {
  readonly arm: Arm;
  readonly samples: readonly Sample[];
  readonly requests: number;
  readonly failed: number;
  /** End of the first 10 s interval from which every later interval (≥ 5 judged) stayed ≥ 90%, or null. */
  readonly recoveredAtS: number | null;
  readonly finalWindowAccuracy: number | null;
  readonly tokenHitRate: number | null;
  readonly removedBlocks: number;
  readonly speculative: number;
}

interface Usage {
  readonly status: number;
  readonly promptTokens?: number;
  readonly cachedTokens?: number;
  readonly completionTokens?: number;
}

function complete(engine: EngineHandle, r: BenchRequest, agent: Agent): Promise<Usage> {
  const body = JSON.stringify({ model: BENCH_MODEL, prompt: r.prompt, max_tokens: r.maxTokens, ignore_eos: true, temperature: 0 });
  return new Promise((resolve) => {
    const req = httpRequest(`${engine.url}/v1/completions`, { method: 'POST', agent, headers: { 'content-type': 'application/json' }, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          const j = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
            usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } };
          };
          const u = j.usage;
          resolve({
            status: res.statusCode ?? 0,
            ...(u?.prompt_tokens !== undefined ? { promptTokens: u.prompt_tokens } : {}),
            ...(u?.prompt_tokens_details?.cached_tokens !== undefined ? { cachedTokens: u.prompt_tokens_details.cached_tokens } : {}),
            ...(u?.completion_tokens !== undefined ? { completionTokens: u.completion_tokens } : {}),
          });
        } catch {
          resolve({ status: res.statusCode ?? 0 });
        }
      });
      res.on('error', () => resolve({ status: 0 }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0 }));
    req.end(body);
  });
}

export async function runArm(arm: Arm, engines: readonly EngineHandle[], seconds: number, log: (m: string) => void): Promise<ArmResult> {
  const S = CALIBRATION_SETUP;
  const config = armConfig(arm, engines);
  const scheduler = createScheduler(config, { clock: systemClock, rng: seededRng(S.seed) });
  await scheduler.start();
  const byAddress = new Map(engines.map((e) => [e.address, e] as const));
  const workload = sharedPrefixWorkload({
    groups: S.groups,
    promptsPerGroup: 1000,
    systemPromptTokens: S.systemPromptTokens,
    questionTokens: S.questionTokens,
    outputTokens: S.outputTokens,
    requests: Math.round(S.qps * seconds),
    api: 'completions',
    arrival: { kind: 'poisson', qps: S.qps },
    seed: S.seed,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const samples: Sample[] = [];
  let prev = { judged: 0, confirmed: 0, requests: 0, prompt: 0, cached: 0 };
  let requests = 0;
  let failed = 0;
  let promptTok = 0;
  let cachedTok = 0;
  const t0 = performance.now();
  const sample = (): void => {
    const st = calibrationStats(scheduler);
    if (st === undefined) return;
    const dj = st.judged - prev.judged;
    const dc = st.confirmed - prev.confirmed;
    const dp = promptTok - prev.prompt;
    const dh = cachedTok - prev.cached;
    const caps = st.endpoints.map((e) => e.capacityBlocks);
    samples.push({
      atS: Math.round((performance.now() - t0) / 100) / 10,
      requests: requests - prev.requests,
      judged: dj,
      confirmed: dc,
      intervalAccuracy: dj > 0 ? dc / dj : null,
      windowAccuracy: st.accuracy ?? null,
      meanIndexCapacityBlocks: Math.round(caps.reduce((a, b) => a + b, 0) / Math.max(1, caps.length)),
      engineHitRate: dp > 0 ? dh / dp : null,
    });
    prev = { judged: st.judged, confirmed: st.confirmed, requests, prompt: promptTok, cached: cachedTok };
  };
  const timer = setInterval(sample, S.sampleEveryMs);
  const pending: Promise<void>[] = [];
  try {
    for (const r of workload.requests) {
      const wait = r.atMs - (performance.now() - t0);
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      const prompt = r.prompt ?? '';
      const rr: RouteRequest = {
        requestId: r.id,
        model: BENCH_MODEL,
        prefix: prompt.slice(0, config.requests.maxPrefixChars),
        promptChars: prompt.length,
        promptTokens: Math.ceil(prompt.length / config.requests.charsPerToken),
        maxTokens: r.maxTokens,
        stream: false,
        arrivalMs: systemClock.nowMs(),
      };
      const ticket = scheduler.route(rr);
      const engine = byAddress.get(ticket.decision.endpoint.id);
      if (engine === undefined) throw new Error(`router chose unknown endpoint ${ticket.decision.endpoint.id}`);
      requests++;
      pending.push(
        complete(engine, r, agent).then((u) => {
          if (u.status !== 200) failed++;
          if (u.promptTokens !== undefined && u.cachedTokens !== undefined) {
            promptTok += u.promptTokens;
            cachedTok += u.cachedTokens;
          }
          ticket.finish({
            status: u.status,
            aborted: u.status === 0,
            servedBy: engine.address,
            ...(u.promptTokens !== undefined ? { promptTokens: u.promptTokens } : {}),
            ...(u.cachedTokens !== undefined ? { cachedTokens: u.cachedTokens } : {}),
            ...(u.completionTokens !== undefined ? { completionTokens: u.completionTokens } : {}),
          });
        }),
      );
    }
    await Promise.all(pending);
    sample();
  } finally {
    clearInterval(timer);
    await scheduler.stop();
    agent.destroy();
  }
  const st = calibrationStats(scheduler);
  let recoveredAtS: number | null = null;
  // Recovered = every later interval with enough judged predictions (≥ 5) at ≥ 90%.
  for (let i = samples.length - 1; i >= 0; i--) {
    const s = samples[i]!;
    if (s.judged < 5 || s.intervalAccuracy === null) continue;
    if (s.intervalAccuracy < 0.9) break;
    recoveredAtS = s.atS;
  }
  const res: ArmResult = {
    arm,
    samples,
    requests,
    failed,
    recoveredAtS,
    finalWindowAccuracy: st?.accuracy ?? null,
    tokenHitRate: promptTok > 0 ? cachedTok / promptTok : null,
    removedBlocks: st?.removedBlocks ?? 0,
    speculative: st?.speculative ?? 0,
  };
  log(`  ${arm}: ${requests} requests (${failed} failed), final accuracy ${pct(res.finalWindowAccuracy)}, recovered at ${res.recoveredAtS ?? '–'} s, token hit ${pct(res.tokenHitRate)}`);
  return res;
}

function pct(x: number | null): string {
  return x === null ? '–' : `${(x * 100).toFixed(1)}%`;
}

export function calibrationMarkdown(results: readonly ArmResult[], seconds: number, info: Record<string, unknown>): string {
  const S = CALIBRATION_SETUP;
  const lines: string[] = [];
  lines.push('# load-calibration: predicted-hit accuracy when engines cache less than the router assumes', '');
  lines.push(
    `Setup: ${S.engines} simulated engines, ${S.kvBlocks} KV blocks of 16 tokens each (${S.kvBlocks * 16} tokens), ${S.groups} system prompts of ${S.systemPromptTokens} tokens + ${S.questionTokens}-token questions, ${S.qps} req/s Poisson for ${seconds} s, cache-aware strategy, router index capacity 31,250 blocks (the default, ≈ 500k tokens per engine). Scheduler driven in-process against the engines over HTTP. Seed ${S.seed}.`,
    '',
  );
  lines.push('| arm | requests | final accuracy (last 200 judged) | interval accuracy ≥ 90% from | engine token hit rate | blocks removed | speculative (not judged) |');
  lines.push('|---|---|---|---|---|---|---|');
  for (const r of results) {
    lines.push(`| ${r.arm} | ${r.requests} | ${pct(r.finalWindowAccuracy)} | ${r.recoveredAtS === null ? 'never' : `${r.recoveredAtS} s`} | ${pct(r.tokenHitRate)} | ${r.removedBlocks} | ${r.speculative} |`);
  }
  lines.push('', '## Accuracy per 10 s interval (judged predictions confirmed by the engine)', '');
  const header = ['t (s)', ...results.map((r) => r.arm)];
  lines.push(`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`);
  const n = Math.max(...results.map((r) => r.samples.length));
  for (let i = 0; i < n; i++) {
    const t = results.find((r) => r.samples[i] !== undefined)?.samples[i]?.atS ?? '';
    const cells = results.map((r) => {
      const s = r.samples[i];
      return s === undefined ? '' : `${pct(s.intervalAccuracy)} (${s.judged}, cap ${s.meanIndexCapacityBlocks})`;
    });
    lines.push(`| ${t} | ${cells.join(' | ')} |`);
  }
  lines.push('', 'Cells: accuracy (judged predictions in the interval, mean index capacity in blocks at the end of it).', '');
  lines.push('```json', JSON.stringify(info, null, 1), '```', '');
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, seconds: { type: 'string' } } });
  const outDir = values.out ?? join(REPO_ROOT, 'bench', 'results', 'load-calibration');
  const seconds = values.seconds === undefined ? 90 : Number(values.seconds);
  const S = CALIBRATION_SETUP;
  const log = (m: string): void => void process.stdout.write(`${m}\n`);
  log(`load-calibration: ${S.engines} engines × ${S.kvBlocks} KV blocks, ${seconds} s per arm`);
  const fleet = await startEngineFleet(S.engines, { ...ENGINE_MODEL_FLAGS, 'time-scale': 1, 'kv-cache-blocks': S.kvBlocks }, BENCH_MODEL);
  const results: ArmResult[] = [];
  try {
    for (const arm of ARMS) {
      await resetEngines(fleet.engines);
      results.push(await runArm(arm, fleet.engines, seconds, log));
    }
  } finally {
    await fleet.stop();
  }
  mkdirSync(outDir, { recursive: true });
  const info = { ...collectRunInfo(REPO_ROOT), setup: S, seconds, engineFlags: { ...ENGINE_MODEL_FLAGS, 'time-scale': 1, 'kv-cache-blocks': S.kvBlocks } };
  writeFileSync(join(outDir, 'results.json'), JSON.stringify({ experiment: 'load-calibration', info, results }, null, 1) + '\n');
  writeFileSync(join(outDir, 'results.md'), calibrationMarkdown(results, seconds, info));
  log(`done: ${join(outDir, 'results.md')}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}

function calibrationStats(scheduler: Scheduler) {
  const p = scheduler.plugin('index-calibration');
  return p instanceof IndexCalibration ? p.stats() : undefined;
}
