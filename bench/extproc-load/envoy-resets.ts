/**
 * Envoy's ext_proc stream resets against Node's HTTP/2 reset limit, end to end: a real
 * Envoy (variant original-dst) in front of the real router CLI and 2 sim engines, N
 * non-streaming chat completions through Envoy with a fixed number in flight, counted by
 * HTTP status. Without Envoy's runtime flag ext_proc_graceful_grpc_close every request
 * ends its ext_proc stream with an RST_STREAM, and Node 20 accepts only a burst of 1000
 * per connection (refill 33/s); the router retires connections before that limit
 * (src/extproc/connection-recycler.ts). This measures what still fails with the flag off
 * and on (docs/extproc.md).
 *
 *   npx tsc -p tsconfig.json && node dist/bench/extproc-load/envoy-resets.js [--requests 4000] [--concurrency 64] [--reps 1]
 *       [--time-scale 0.05] [--out bench/results/extproc-load]
 *
 * Matrix (the grpc-js server): graceful close off without and with the
 * refused-stream retry of the shipped configs, and graceful close on (with retry); the cells
 * alternately per repetition, each on a fresh stack. Bounded: requests ≤ 20000,
 * concurrency ≤ 256, reps ≤ 10, each cell's load ≤ 120 s (requests not sent by then are
 * reported as unsent). Router logs at info so its connection retirements can be counted.
 * Writes <out>/envoy-resets.{json,md}.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { CHAT_PATH, chatRequest, systemPrompt, tally } from '../../test/kit/chat-requests.js';
import { httpRequest } from '../../test/kit/http-client.js';
import { runDir, sleep, startStack, type Stack } from '../../test/kit/processes.js';
import { ENVOY_BIN, REPO_ROOT } from '../../test/kit/repo-paths.js';
import { gitOutput } from '../micro/git-output.js';

const TRANSPORTS = ['grpc-js'] as const;
type Transport = (typeof TRANSPORTS)[number];

const MAX_REQUESTS = 20_000;
const CELL_LOAD_LIMIT_MS = 120_000;
const REQUEST_TIMEOUT_MS = 30_000;
const WARMUP_REQUESTS = 32;
const SHARED_PREFIXES = 4;
const PREFIX_TOKENS = 64;
const ENGINES = 2;
const RETIRE_LOG = 'retiring ext_proc connection before the HTTP/2 reset limit';
/** A failure this soon after a logged retirement counts as "at a retirement". */
const NEAR_RETIREMENT_MS = 250;
const MAX_RECORDED_FAILURES = 2000;

interface Counts {
  /** HTTP status → responses. */
  readonly statuses: Record<string, number>;
  /** Transport error message → count. */
  readonly errors: Record<string, number>;
}

interface CellResult {
  readonly transport: Transport;
  readonly gracefulGrpcClose: boolean;
  /** The ext_proc grpc_service retry_policy (refused-stream) left in place. */
  readonly retry: boolean;
  readonly rep: number;
  readonly requests: number;
  readonly sent: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly nonOkByStatus: Record<string, number>;
  readonly errors: number;
  readonly errorMessages: Record<string, number>;
  readonly unsent: number;
  readonly seconds: number;
  readonly requestsPerSecond: number;
  readonly warmup: Counts;
  /** Router log lines 'retiring ext_proc connection ...' (whole cell, warm-up included). */
  readonly routerRetirements: number;
  /** ms from the load's start to each logged retirement (negative: during the warm-up). */
  readonly retirementAtMs: number[];
  /** ms from the load's start to each failed response or error (first MAX_RECORDED_FAILURES). */
  readonly failureAtMs: number[];
  /** For each recorded failure: ms since the latest retirement logged before it (null: none before). */
  readonly failureMsAfterRetirement: Array<number | null>;
  /** Recorded failures within NEAR_RETIREMENT_MS after a logged retirement. */
  readonly failuresNearRetirement: number;
  /** Router warn/error log lines by message. */
  readonly routerWarnings: Record<string, number>;
  /** Envoy access-log entries of failed requests by `status flags details`. */
  readonly envoyFailures: Record<string, number>;
  /** Selected Envoy counters (ext_proc filter, cacheroute_extproc cluster) after the load. */
  readonly envoyStats: Record<string, number>;
  /** Router Prometheus samples about ext_proc streams after the load. */
  readonly routerMetrics: Record<string, number>;
}

function bounded(raw: string, min: number, max: number, what: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`--${what} must be within [${min}, ${max}], got ${raw}`);
  return n;
}

/** Short prompts over a few shared system prefixes (cache affinity still matters). */
function requestBodies(count: number): string[] {
  const systems = Array.from({ length: SHARED_PREFIXES }, (_, i) => systemPrompt(`envoy-resets-${i}`, PREFIX_TOKENS));
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify(chatRequest(systems[i % SHARED_PREFIXES]!, `question ${i}: how do I reset my password?`, { maxTokens: 4 })),
  );
}

function bump(m: Record<string, number>, key: string, by = 1): void {
  m[key] = (m[key] ?? 0) + by;
}

/** Sends `bodies` with at most `concurrency` in flight, stopping new sends at `deadline`. */
async function sendAll(
  url: string,
  bodies: readonly string[],
  concurrency: number,
  deadline: number,
  agent: Agent,
): Promise<Counts & { sent: number; seconds: number; startedAt: number; failureAt: number[] }> {
  const statuses: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const failureAt: number[] = [];
  const fail = (): void => void (failureAt.length < MAX_RECORDED_FAILURES && failureAt.push(Date.now()));
  let next = 0;
  const startedAt = Date.now();
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < bodies.length && Date.now() < deadline) {
      const body = bodies[next++]!;
      try {
        const res = await httpRequest(url, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
          agent,
          timeoutMs: Math.max(1000, Math.min(REQUEST_TIMEOUT_MS, deadline + REQUEST_TIMEOUT_MS - Date.now())),
        });
        bump(statuses, String(res.status));
        if (res.status < 200 || res.status >= 300) fail();
      } catch (err) {
        bump(errors, err instanceof Error ? err.message.slice(0, 160) : String(err));
        fail();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, bodies.length) }, worker));
  return { statuses, errors, sent: next, seconds: (performance.now() - started) / 1000, startedAt, failureAt };
}

/** Envoy counters whose names match `regex` (admin /stats?filter=). */
async function envoyCounters(adminUrl: string, regex: string): Promise<Record<string, number>> {
  const res = await httpRequest(`${adminUrl}/stats?filter=${encodeURIComponent(regex)}`, { timeoutMs: 5000 });
  const out: Record<string, number> = {};
  for (const line of res.text().split('\n')) {
    const m = /^(\S+): (\d+)$/.exec(line.trim());
    if (m && m[1] !== undefined && m[2] !== undefined) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** Router samples of ext_proc stream counters (`name{labels}` → value). */
function routerStreamSamples(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith('cacheroute_extproc_stream')) continue;
    const m = /^(\S+) (\S+)$/.exec(line);
    if (m && m[1] !== undefined && m[2] !== undefined && Number(m[2]) !== 0) out[m[1]] = Number(m[2]);
  }
  return out;
}

function jsonLines(file: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a partial or foreign line
    }
  }
  return out;
}

async function runCell(
  transport: Transport,
  gracefulGrpcClose: boolean,
  retry: boolean,
  rep: number,
  requests: number,
  concurrency: number,
  timeScale: number,
): Promise<CellResult> {
  const stack: Stack = await startStack({
    engines: { count: ENGINES, flags: { profile: 'gpu-like', 'time-scale': timeScale } },
    router: { name: `router-${transport}`, config: { telemetry: { logLevel: 'info' } } },
    envoys: [
      {
        variant: 'original-dst',
        gracefulGrpcClose,
        refusedStreamRetry: retry,
        name: `envoy-${transport}-graceful-${gracefulGrpcClose}-retry-${retry}`,
      },
    ],
  });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    const envoy = stack.envoys[0]!;
    const router = stack.router!;
    const url = `${envoy.url}${CHAT_PATH}`;
    const warm = await sendAll(url, requestBodies(WARMUP_REQUESTS), 8, Date.now() + 30_000, agent);
    const load = await sendAll(url, requestBodies(requests), concurrency, Date.now() + CELL_LOAD_LIMIT_MS, agent);
    const envoyStats = await envoyCounters(
      envoy.adminUrl,
      '(ext_proc\\.|cluster\\.cacheroute_extproc\\.(upstream_cx_total|upstream_cx_destroy|upstream_rq_total|upstream_rq_reset|upstream_rq_tx_reset|upstream_rq_retry|upstream_rq_retry_success|upstream_cx_protocol_error))',
    );
    const routerMetrics = routerStreamSamples(await router.metrics());
    await stack.stop();
    await sleep(300); // let the log streams flush after exit
    const retiredAt: number[] = [];
    const routerWarnings: Record<string, number> = {};
    for (const rec of jsonLines(router.logFile)) {
      if (rec['msg'] === RETIRE_LOG) retiredAt.push(Date.parse(String(rec['ts'])));
      if (rec['level'] === 'warn' || rec['level'] === 'error') bump(routerWarnings, `${String(rec['level'])}: ${String(rec['msg'])}`);
    }
    const envoyFailures: Record<string, number> = {};
    for (const rec of jsonLines(envoy.logFile)) {
      const status = Number(rec['status']);
      if (rec['path'] === undefined || (status >= 200 && status < 300)) continue;
      bump(envoyFailures, `${String(rec['status'])} ${String(rec['flags'])} ${String(rec['details'])}`);
    }
    const nonOkByStatus = Object.fromEntries(Object.entries(load.statuses).filter(([s]) => !s.startsWith('2')));
    const ok = Object.entries(load.statuses)
      .filter(([s]) => s.startsWith('2'))
      .reduce((a, [, n]) => a + n, 0);
    const non2xx = Object.values(nonOkByStatus).reduce((a, n) => a + n, 0);
    const errors = Object.values(load.errors).reduce((a, n) => a + n, 0);
    retiredAt.sort((a, b) => a - b);
    const failureMsAfterRetirement = load.failureAt.map((t) => {
      const before = retiredAt.filter((r) => r <= t);
      return before.length === 0 ? null : t - before[before.length - 1]!;
    });
    return {
      transport,
      gracefulGrpcClose,
      retry,
      rep,
      requests,
      sent: load.sent,
      ok,
      non2xx,
      nonOkByStatus,
      errors,
      errorMessages: load.errors,
      unsent: requests - load.sent,
      seconds: load.seconds,
      requestsPerSecond: load.sent / load.seconds,
      warmup: { statuses: warm.statuses, errors: warm.errors },
      routerRetirements: retiredAt.length,
      retirementAtMs: retiredAt.map((t) => t - load.startedAt),
      failureAtMs: load.failureAt.map((t) => t - load.startedAt),
      failureMsAfterRetirement,
      failuresNearRetirement: failureMsAfterRetirement.filter((d) => d !== null && d <= NEAR_RETIREMENT_MS).length,
      routerWarnings,
      envoyFailures,
      envoyStats,
      routerMetrics,
    };
  } finally {
    agent.destroy();
    await stack.stop();
  }
}

/** ` (ms after the retirement: min–max)` over the recorded failures that followed one. */
function nearSummary(c: CellResult): string {
  const ds = c.failureMsAfterRetirement.filter((d): d is number => d !== null);
  if (ds.length === 0) return '';
  const perRetirement = c.retirementAtMs.map((r, i) => {
    const nextAt = c.retirementAtMs[i + 1] ?? Infinity;
    return c.failureAtMs.filter((t) => t >= r && t < nextAt).length;
  });
  return ` (ms after the latest retirement: ${Math.min(...ds)}–${Math.max(...ds)}; failures after each retirement in turn: ${perRetirement.join(', ')})`;
}

function fmtMap(m: Record<string, number>): string {
  const entries = tally(Object.entries(m).flatMap(([k, n]) => Array<string>(n).fill(k)));
  return entries.length === 0 ? '–' : entries.map(([k, n]) => `${k}: ${n}`).join(', ');
}

function markdown(result: {
  commit: string;
  dirty: readonly string[];
  date: string;
  loadavgBefore: number[];
  loadavgAfter: number[];
  envoyVersion: string;
  setup: Record<string, unknown>;
  cells: readonly CellResult[];
}): string {
  const { cells } = result;
  const lines = [
    "# Envoy ext_proc stream resets vs Node's HTTP/2 reset limit",
    '',
    `Commit \`${result.commit}\`${result.dirty.length > 0 ? ` (dirty: ${result.dirty.join(', ')})` : ' (clean)'}; ${result.date}; Node ${process.version}, Envoy ${result.envoyVersion}, ${cpus().length} cores; load average before ${result.loadavgBefore.map((x) => x.toFixed(2)).join(' / ')}, after ${result.loadavgAfter.map((x) => x.toFixed(2)).join(' / ')}.`,
    '',
    `Setup: real Envoy (\`envoy/original-dst.yaml\` rendered with \`gracefulGrpcClose\`, 1 worker) → real router CLI (default connection recycling, log level info) → ${ENGINES} sim engines (time scale ${String(result.setup['timeScale'])}). ` +
      `Each cell on a fresh stack: ${WARMUP_REQUESTS} warm-up requests (8 in flight, not in the table), then ${String(result.setup['requests'])} non-streaming chat completions (max_tokens 4, ${SHARED_PREFIXES} shared ${PREFIX_TOKENS}-token system prompts) over HTTP/1.1 keep-alive with ${String(result.setup['concurrency'])} in flight. ` +
      `Cells alternate per repetition; ${String(result.setup['reps'])} repetition(s). \`graceful close\` = runtime flag \`envoy.reloadable_features.ext_proc_graceful_grpc_close\` (false: Envoy sends RST_STREAM at the end of every ext_proc stream).`,
    '',
    '| rep | transport | graceful close | refused-stream retry | requests | non-2xx (by status) | errors | req/s | ext_proc streams reset by Envoy | ext_proc streams retried by Envoy | router connection retirements | Envoy → router connections |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...cells.map(
      (c) =>
        `| ${c.rep} | ${c.transport} | ${c.gracefulGrpcClose} | ${c.retry ? 'on' : 'off'} | ${c.sent}${c.unsent > 0 ? ` (${c.unsent} unsent)` : ''} | ${c.non2xx}${c.non2xx > 0 ? ` (${fmtMap(c.nonOkByStatus)})` : ''} | ${c.errors} | ${c.requestsPerSecond.toFixed(0)} | ${c.envoyStats['cluster.cacheroute_extproc.upstream_rq_tx_reset'] ?? '?'} | ${c.envoyStats['cluster.cacheroute_extproc.upstream_rq_retry'] ?? '?'} | ${c.routerRetirements} | ${c.envoyStats['cluster.cacheroute_extproc.upstream_cx_total'] ?? '?'} |`,
    ),
    '',
  ];
  const failed = cells.filter(
    (c) => c.non2xx > 0 || c.errors > 0 || Object.keys(c.envoyFailures).length > 0 || Object.keys(c.warmup.errors).length > 0,
  );
  if (failed.length > 0) {
    lines.push('## Failures', '');
    for (const c of failed) {
      lines.push(
        `- rep ${c.rep}, ${c.transport}, graceful close ${c.gracefulGrpcClose}, retry ${c.retry ? 'on' : 'off'}: ${c.non2xx} non-2xx, ${c.errors} client errors; ` +
          `Envoy access log (status flags details, warm-up included): ${fmtMap(c.envoyFailures)}; ` +
          `client errors: ${fmtMap(c.errorMessages)}; router retirements logged: ${c.routerRetirements} (at ${c.retirementAtMs.map((t) => `${(t / 1000).toFixed(2)} s`).join(', ') || '–'} into the load); ` +
          `failures within ${NEAR_RETIREMENT_MS} ms after a logged retirement: ${c.failuresNearRetirement} of ${c.failureMsAfterRetirement.length} recorded${nearSummary(c)}; ` +
          `router warnings: ${fmtMap(c.routerWarnings)}; router stream counters: ${fmtMap(c.routerMetrics)}.`,
      );
    }
    lines.push('');
  } else {
    lines.push('No request failed in any cell.', '');
  }
  lines.push(
    "ext_proc streams reset by Envoy: Envoy counter `cluster.cacheroute_extproc.upstream_rq_tx_reset` (warm-up included). Router connection retirements: log lines 'retiring ext_proc connection before the HTTP/2 reset limit' (warm-up included). Envoy → router connections: Envoy counter `cluster.cacheroute_extproc.upstream_cx_total` after the load (warm-up included; it may also count the TCP health check connection).",
    '',
    'Per-cell Envoy ext_proc counters and router stream counters are in envoy-resets.json; the process logs of the run stayed in the git-ignored run directory named there.',
    '',
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '4000' },
      concurrency: { type: 'string', default: '64' },
      reps: { type: 'string', default: '1' },
      'time-scale': { type: 'string', default: '0.05' },
      out: { type: 'string', default: join(REPO_ROOT, 'bench', 'results', 'extproc-load') },
    },
  });
  const requests = bounded(values.requests, 1, MAX_REQUESTS, 'requests');
  const concurrency = bounded(values.concurrency, 1, 256, 'concurrency');
  const reps = bounded(values.reps, 1, 10, 'reps');
  const timeScale = bounded(values['time-scale'], 0.001, 1, 'time-scale');
  const dirtyOut = gitOutput(['status', '--porcelain', '--', 'src', 'bench', 'test/helpers', 'envoy']);
  // gitOutput trims, so the first line may have lost the leading blank of its status code.
  const dirty =
    dirtyOut === 'unknown' || dirtyOut === ''
      ? []
      : dirtyOut
          .split('\n')
          .map((l) => l.replace(/^\s*\S{1,2}\s+/, ''))
          .filter((p) => !p.startsWith('bench/results/'));
  const loadavgBefore = loadavg();
  const cells: CellResult[] = [];
  // Per transport: resets without and with Envoy's refused-stream retry, and graceful close (with retry, as shipped).
  const matrix = TRANSPORTS.flatMap(
    (t) =>
      [
        [t, false, false],
        [t, false, true],
        [t, true, true],
      ] as const,
  );
  for (let rep = 1; rep <= reps; rep++) {
    // Alternate the order each repetition so no cell always runs first.
    const order = rep % 2 === 1 ? matrix : [...matrix].reverse();
    for (const [transport, graceful, retry] of order) {
      const cell = await runCell(transport, graceful, retry, rep, requests, concurrency, timeScale);
      cells.push(cell);
      process.stderr.write(
        `rep ${rep} ${transport} graceful=${graceful} retry=${retry}: ${cell.sent} sent, ${cell.non2xx} non-2xx ${JSON.stringify(cell.nonOkByStatus)}, ${cell.errors} errors, ${cell.requestsPerSecond.toFixed(0)} req/s, ${cell.routerRetirements} retirements\n`,
      );
    }
  }
  const result = {
    benchmark: 'extproc-load envoy-resets',
    date: new Date().toISOString(),
    commit: gitOutput(['rev-parse', 'HEAD']),
    logs: relative(REPO_ROOT, runDir()),
    dirty,
    node: process.version,
    envoyVersion: /\/(\d+\.\d+\.\d+)\//.exec(envoyVersionText())?.[1] ?? 'unknown',
    cpus: cpus().length,
    loadavgBefore,
    loadavgAfter: loadavg(),
    setup: {
      envoyVariant: 'original-dst',
      engines: ENGINES,
      timeScale,
      requests,
      concurrency,
      reps,
      warmupRequests: WARMUP_REQUESTS,
      sharedPrefixes: SHARED_PREFIXES,
      prefixTokens: PREFIX_TOKENS,
      maxTokens: 4,
      stream: false,
      routerLogLevel: 'info',
      cellLoadLimitMs: CELL_LOAD_LIMIT_MS,
    },
    cells,
  };
  mkdirSync(values.out, { recursive: true });
  writeFileSync(join(values.out, 'envoy-resets.json'), JSON.stringify(result, null, 1) + '\n');
  const md = markdown(result);
  writeFileSync(join(values.out, 'envoy-resets.md'), md);
  process.stdout.write(md);
}

/** `envoy --version` output of the harness's Envoy binary ('' if it cannot run). */
function envoyVersionText(): string {
  try {
    return execFileSync(ENVOY_BIN, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  } catch {
    return '';
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`envoy-resets: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
