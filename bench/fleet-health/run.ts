/**
 * `npm run bench -- fleet-health [--main <other checkout>/dist/src/main.js] [--out DIR] [--only a,b]`
 *
 * Runs the fleet-health scenarios (test/kit/fleet-scenarios.ts) with this checkout's router, and the
 * cheap ones (sigkill, abandoned) side by side with another build (`--main`, e.g. main's),
 * then writes DIR/summary.md and DIR/run.json (parameters, seed, commit, every number).
 * Bounded: each scenario is a fixed number of seconds of load; the whole run is ~4 minutes.
 * Run it under `flock /work/coord/heavy.lock` on a shared machine.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { portableString, writeJson } from '../report/result-files.js';
import {
  runAbandoned,
  runFairness,
  runOverload,
  runSigkill,
  type AbandonedResult,
  type FairnessResult,
  type OverloadResult,
  type PhaseStats,
  type SigkillResult,
} from '../../test/kit/fleet-scenarios.js';

interface Args {
  main?: string;
  out: string;
  only?: Set<string>;
  queuedPerEngine: number;
}

function parseArgs(argv: readonly string[]): Args {
  const a: Args = { out: join(REPO_ROOT, 'bench', 'results', 'fleet-health'), queuedPerEngine: 2 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (k === '--main' && v) (a.main = v), i++;
    else if (k === '--out' && v) (a.out = v), i++;
    else if (k === '--only' && v) (a.only = new Set(v.split(','))), i++;
    else if (k === '--queued-per-engine' && v) (a.queuedPerEngine = Number(v)), i++;
    else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

/** Router config of the branch runs: health on (defaults), short stream idle timeouts for the abandoned probe. */
const IDLE = { server: { requestIdleTimeoutMs: 2000, responseIdleTimeoutMs: 3000 } };
const OVERLOAD_ENGINES = 4;
/** `--queued-per-engine` (default 2): admission.saturation.maxQueuedPerEndpoint of the overload/fairness runs. */
let QUEUED_PER_ENGINE = 2;
const OVERLOAD = {
  engines: OVERLOAD_ENGINES,
  /** Closed-loop concurrency that finds the saturation rate: every engine at the threshold. */
  calibrateConcurrency: OVERLOAD_ENGINES * 2,
  calibrateMs: 4000,
  phaseMs: 8000,
  timeoutMs: 20_000,
  promptTokens: 800,
};
const admission = (mode: 'off' | 'reject' | 'queue', maxWaitMs = 1000) => ({
  admission: { mode, tenantHeader: 'x-tenant', saturation: { maxQueuedPerEndpoint: QUEUED_PER_ENGINE }, queue: { maxWaitMs } },
});

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  QUEUED_PER_ENGINE = args.queuedPerEngine;
  OVERLOAD.calibrateConcurrency = OVERLOAD_ENGINES * QUEUED_PER_ENGINE;
  const want = (s: string) => args.only === undefined || args.only.has(s);
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim() !== '';
  const started = new Date().toISOString();
  const results: Record<string, unknown> = {};
  const log = (s: string) => process.stderr.write(`[fleet-health] ${s}\n`);

  const sigkillOpts = { ratePerSec: 20, beforeKillMs: 3000, afterKillMs: 4000, afterRestartMs: 3000 };
  if (want('sigkill')) {
    log('sigkill (branch)');
    results['sigkill'] = { branch: await runSigkill({ ...sigkillOpts, stack: { name: 'fh-sigkill', timeScale: 0.1 } }) };
    if (args.main) {
      log('sigkill (main)');
      (results['sigkill'] as Record<string, unknown>)['main'] = await runSigkill({
        ...sigkillOpts,
        stack: { name: 'fh-sigkill-main', timeScale: 0.1, routerMain: args.main },
      });
    }
  }
  const abandonedOpts = { streams: 200, watchMs: 8000, badStreams: 2000 };
  if (want('abandoned')) {
    log('abandoned (branch)');
    results['abandoned'] = {
      branch: await runAbandoned({ ...abandonedOpts, stack: { name: 'fh-abandoned', timeScale: 0.1, router: IDLE } }),
    };
    if (args.main) {
      log('abandoned (main)');
      (results['abandoned'] as Record<string, unknown>)['main'] = await runAbandoned({
        ...abandonedOpts,
        stack: { name: 'fh-abandoned-main', timeScale: 0.1, routerMain: args.main },
      });
    }
  }
  let saturation: number | undefined;
  if (want('overload')) {
    const ov: Record<string, OverloadResult> = {};
    for (const [label, router] of [
      ['off', admission('off')],
      ['reject', admission('reject')],
      ['queue', admission('queue', 1000)],
    ] as const) {
      log(`overload (admission ${label})`);
      ov[label] = await runOverload(
        { ...OVERLOAD, stack: { name: `fh-overload-${label}`, timeScale: 1, router }, unsaturatedFactor: 0.5, overloadFactor: 2 },
        saturation,
      );
      saturation ??= ov[label]!.saturationRate;
    }
    results['overload'] = ov;
  }
  if (want('fairness')) {
    const fa: Record<string, FairnessResult> = {};
    for (const [label, router] of [
      ['queue', admission('queue', 3000)],
      ['off', admission('off')],
    ] as const) {
      log(`fairness (admission ${label})`);
      fa[label] = await runFairness(
        { ...OVERLOAD, stack: { name: `fh-fairness-${label}`, timeScale: 1, router }, lightFactor: 0.2 },
        saturation,
      );
      saturation ??= fa[label]!.saturationRate;
    }
    results['fairness'] = fa;
  }

  const run = {
    benchmark: 'fleet-health',
    started,
    finished: new Date().toISOString(),
    commit,
    dirty,
    seed: 'sim engines seeded by launch order (--seed=0); prompts deterministic (test/kit/synthetic-text.ts)',
    params: {
      sigkill: sigkillOpts,
      abandoned: { ...abandonedOpts, branchRouter: IDLE },
      overload: OVERLOAD,
      queuedPerEngine: QUEUED_PER_ENGINE,
    },
    compareWith: args.main ?? null,
    results,
  };
  mkdirSync(args.out, { recursive: true });
  writeJson(join(args.out, 'run.json'), run, REPO_ROOT);
  writeFileSync(join(args.out, 'summary.md'), portableString(summary(run), REPO_ROOT));
  log(`wrote ${join(args.out, 'summary.md')}`);
}

const ms = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : `${Math.round(x)} ms`);
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : 'n/a');
const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? 'n/a' : `${(a / b).toFixed(2)}×`);

function phaseRow(label: string, p: PhaseStats): string {
  return `| ${label} | ${p.ratePerSec.toFixed(1)} | ${p.sent} | ${p.ok} | ${p.tooMany} (${p.withRetryAfter} with Retry-After) | ${p.failed} | ${ms(p.ttft.p50)} | ${ms(p.ttft.p99)} | ${p.goodput.toFixed(1)} |`;
}

function summary(run: {
  commit: string;
  dirty: boolean;
  started: string;
  compareWith: string | null;
  results: Record<string, unknown>;
}): string {
  const out: string[] = [];
  out.push(`# fleet-health — engine health, admission control, stream hygiene`, '');
  out.push(
    `Commit ${run.commit}${run.dirty ? ' (dirty)' : ''}, ${run.started}. Rerun: \`npx tsc -p tsconfig.json && flock /work/coord/heavy.lock npm run bench -- fleet-health${run.compareWith ? ' --main <main checkout>/dist/src/main.js' : ''}\`.`,
  );
  out.push(
    'Real processes on loopback: sim engines (bench/sim-engine), Envoy 1.40 (envoy/override-host.yaml rendered), the router (`node dist/src/main.js serve`). "main" = the same harness with the router built from main.',
    '',
  );
  const sk = run.results['sigkill'] as { branch: SigkillResult; main?: SigkillResult } | undefined;
  if (sk) {
    out.push(
      '## Engine SIGKILL under load (4 engines, 20 req/s streamed, kill at 3 s, 4 s more load; restart with no load; 3 s load after)',
      '',
    );
    out.push('| | this branch | main |', '|---|---|---|');
    const row = (name: string, f: (r: SigkillResult) => string) =>
      out.push(`| ${name} | ${f(sk.branch)} | ${sk.main ? f(sk.main) : 'not run'} |`);
    row('requests', (r) => String(r.requests));
    row('index blocks claimed for it at the kill', (r) => String(r.indexBlocksAtKill));
    row('decisions picking it after the kill', (r) => pct(r.picksAfterKillShare));
    row('last pick after the kill', (r) => (r.lastPickAfterKillMs < 0 ? 'none' : ms(r.lastPickAfterKillMs)));
    row('picks later than 1 s after the kill', (r) => String(r.picksLaterThan1s));
    row('router said healthy while it was down (share of 100 ms samples)', (r) => pct(r.healthyWhileDownShare));
    row('failed requests (excluding responses already streaming from it)', (r) => String(r.failedOther));
    row('responses cut mid-stream by the kill', (r) => String(r.brokenStreaming));
    row('re-admitted after restart (from listening)', (r) => (r.readmitMs < 0 ? 'never taken out / not re-admitted' : ms(r.readmitMs)));
    row('index blocks for it at re-admission', (r) => String(r.indexBlocksAtReadmit));
    row('decisions picking it after the restart', (r) => pct(r.picksAfterRestartShare));
    out.push('');
  }
  const ab = run.results['abandoned'] as { branch: AbandonedResult; main?: AbandonedResult } | undefined;
  if (ab) {
    out.push(
      '## 200 abandoned ext_proc streams (100 routed then left, 100 left mid-upload), straight to the router; then 2,000 bad streams',
      '',
    );
    out.push('Branch config: `server.requestIdleTimeoutMs: 2000`, `responseIdleTimeoutMs: 3000`; main has no idle expiry.', '');
    out.push('| | this branch | main |', '|---|---|---|');
    const row = (name: string, f: (r: AbandonedResult) => string) =>
      out.push(`| ${name} | ${f(ab.branch)} | ${ab.main ? f(ab.main) : 'not run'} |`);
    row('in flight after abandoning (requests / prompt tokens)', (r) => `${r.inflightAtStart} / ${r.promptTokensAtStart}`);
    row('back to 0 after', (r) => (r.backToZeroMs < 0 ? `not within 8 s (${r.inflightAtEnd} left)` : ms(r.backToZeroMs)));
    row('router log lines for 2,000 bad streams', (r) => String(r.logLines));
    out.push('');
  }
  const ov = run.results['overload'] as Record<string, OverloadResult> | undefined;
  if (ov) {
    const any = Object.values(ov)[0]!;
    out.push(
      `## Overload step (4 engines at time scale 1, unique 800-token prompts, 8 output tokens; saturation rate ${any.saturationRate.toFixed(1)} req/s = closed-loop throughput with ${QUEUED_PER_ENGINE} requests per engine in flight)`,
      '',
    );
    out.push(
      `Each row: 8 s open-loop phase at 0.5× then 2× the saturation rate. \`maxQueuedPerEndpoint: ${QUEUED_PER_ENGINE}\`; queue mode holds up to 1 s.`,
      '',
    );
    out.push(
      '| admission / phase | rate req/s | sent | ok | 429 | failed/timeouts | TTFT p50 | TTFT p99 | goodput req/s |',
      '|---|---|---|---|---|---|---|---|---|',
    );
    for (const [label, r] of Object.entries(ov)) {
      out.push(phaseRow(`${label} / unsaturated`, r.unsaturated));
      out.push(phaseRow(`${label} / 2× saturation`, r.overload));
    }
    out.push('');
    for (const [label, r] of Object.entries(ov)) {
      out.push(
        `- ${label}: admitted TTFT p99 at 2× saturation = ${ratio(r.overload.ttft.p99, r.unsaturated.ttft.p99)} the unsaturated p99.`,
      );
    }
    out.push('');
  }
  const fa = run.results['fairness'] as Record<string, FairnessResult> | undefined;
  if (fa) {
    out.push('## Tenant fairness (light tenant at 0.2× saturation; heavy tenant at 10× that = 2× saturation; `x-tenant` header)', '');
    out.push(
      '| admission / phase | rate req/s | sent | ok | 429 | failed/timeouts | TTFT p50 | TTFT p99 | goodput req/s |',
      '|---|---|---|---|---|---|---|---|---|',
    );
    for (const [label, r] of Object.entries(fa)) {
      out.push(phaseRow(`${label} / light alone`, r.lightSolo));
      out.push(phaseRow(`${label} / light beside heavy`, r.lightShared));
      out.push(phaseRow(`${label} / heavy`, r.heavyShared));
    }
    out.push('');
    for (const [label, r] of Object.entries(fa)) {
      out.push(
        `- ${label}: light tenant TTFT p99 beside the heavy one = ${ratio(r.lightShared.ttft.p99, r.lightSolo.ttft.p99)} its solo p99.`,
      );
    }
    out.push('');
  }
  return out.join('\n') + '\n';
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`fleet-health: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
