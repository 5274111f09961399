/**
 * results.md: provenance, engine setups with their rationale, the target checks, one
 * table per block, the router's added latency, charts and per-run notes. Tables read
 * left to right as "did it work, how fast, how much, how cached, how balanced".
 */
import type { ExperimentResult } from '../harness/run-experiment.js';
import type { PresetSpec } from '../presets/types.js';
import type { Chart } from './charts.js';
import { fmtMs, fmtNum, fmtPct, fmtRatio, mdTable, NA } from './format.js';
import type { RunInfo } from './run-info.js';
import { replicaTable } from './replica-bars.js';
import { addedLatency, checkTargets } from './targets.js';
import { variantRatios } from './variants.js';

const ROW_HEADER = [
  'scenario',
  'req/s offered',
  'contender',
  'success',
  'TTFT p50',
  'TTFT p90',
  'TTFT p99',
  'e2e p50',
  'e2e p99',
  'req/s',
  'out tok/s',
  'req hit',
  'cached frac',
  'engine tok hit',
  'spread req',
  'spread tok',
];

function row(r: ExperimentResult): string[] {
  const s = r.summary;
  const success = r.error !== null ? `start failed` : `${fmtPct(s.success.successRate)} (${s.success.ok}/${s.success.requests})`;
  return [
    r.scenario.label,
    r.qps === null ? 'trace' : String(r.qps),
    r.contender.label,
    success,
    fmtMs(s.ttftMs.p50),
    fmtMs(s.ttftMs.p90),
    fmtMs(s.ttftMs.p99),
    fmtMs(s.e2eMs.p50),
    fmtMs(s.e2eMs.p99),
    fmtNum(s.reqPerS, 2),
    fmtNum(s.outTokPerS, 0),
    fmtPct(s.hits.requestHitRate),
    fmtPct(s.hits.cachedFraction),
    fmtPct(s.hits.engineTokenHitRate),
    fmtRatio(s.spread.requestsMaxOverMean),
    fmtRatio(s.spread.promptTokensMaxOverMean),
  ];
}

export interface MarkdownInput {
  readonly preset: PresetSpec;
  readonly results: readonly ExperimentResult[];
  readonly charts: readonly Chart[];
  readonly info: RunInfo;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly seed: number;
  readonly partial: boolean;
}

export function resultsMarkdown(input: MarkdownInput): string {
  const { preset, results, info } = input;
  const out: string[] = [];
  out.push(`# Benchmark results: \`${preset.name}\``);
  out.push('');
  out.push(preset.description);
  out.push('');
  if (input.partial) out.push('**Partial run** (filtered or interrupted): only some runs of the preset are included.\n');
  out.push(
    mdTable(
      ['run', 'value'],
      [
        ['command', `\`npm run bench -- --preset ${preset.name}\``],
        ['started / finished', `${input.startedAt} / ${input.finishedAt}`],
        ['seed', String(input.seed)],
        [
          'git commit',
          `${info.gitCommit ?? NA}${info.gitDirty.length ? ` (+ ${info.gitDirty.length} uncommitted paths, see run.json)` : ''}`,
        ],
        ['node / envoy', `${info.node} / ${info.envoy ?? NA}`],
        ['sglang-router / vllm-router', `${info.sglangRouter ?? NA} / ${info.vllmRouter ?? NA}`],
        ['machine', `${info.cpus} × ${info.cpuModel}, ${info.memGiB} GiB; load average at start ${info.loadAvgAtStart.join(' ')}`],
      ],
    ),
  );
  out.push('');
  out.push(
    "Definitions: latencies are over successful requests and measured from the scheduled send time (open loop); success counts every request of the workload (timeouts, HTTP errors and unsent requests are failures); req hit = share of successful requests with `cached_tokens > 0`; cached frac = cached / prompt tokens; engine tok hit = engines' own `vllm:prefix_cache_hits / queries` deltas; spread = max / mean per engine (1.00× = even, N× = all on one engine). Warm-up requests (if any) are sent first and not measured.",
  );
  out.push('');

  out.push('## Engines');
  out.push('');
  const setups = new Map<string, ExperimentResult['engines']>();
  for (const r of results) setups.set(r.engines.label, r.engines);
  const rationale = new Map(preset.blocks.map((b) => [b.engines.label, b.engines.rationale] as const));
  out.push(
    mdTable(
      ['setup', 'engines', 'simulator flags', 'why'],
      [...setups.values()].map((e) => [
        e.label,
        String(e.count),
        Object.entries(e.flags)
          .map(([k, v]) => `--${k}=${String(v)}`)
          .join(' '),
        rationale.get(e.label) ?? '',
      ]),
    ),
  );
  out.push('');

  const targets = checkTargets(results);
  if (targets.length > 0) {
    out.push('## Targets');
    out.push('');
    out.push(
      mdTable(
        ['target', 'status', 'measured'],
        targets.map((t) => [t.target, `**${t.status}**`, t.detail]),
      ),
    );
    out.push('');
  }

  for (const block of [...new Set(results.map((r) => r.block))]) {
    const rs = results.filter((r) => r.block === block);
    out.push(`## ${block}`);
    out.push('');
    const b = preset.blocks.find((x) => x.name === block);
    const wl = rs[0]?.workload;
    if (b)
      out.push(
        `Engines: \`${b.engines.label}\`. Contenders: ${b.contenders.map((c) => `\`${c.label}\``).join(', ')}.${b.routerOverrides ? ` Router overrides: \`${JSON.stringify(b.routerOverrides)}\`.` : ''}`,
      );
    if (wl)
      out.push(
        `Measured requests per run: ${[...new Set(rs.map((r) => r.workload.requests))].join('/')}; ideal (infinite-cache) token reuse ${[...new Set(rs.map((r) => fmtPct(r.workload.idealReuse)))].join(' / ')}.`,
      );
    out.push('');
    out.push(mdTable(ROW_HEADER, rs.map(row)));
    out.push('');
    for (const c of input.charts.filter((c) => c.block === block)) out.push(`![${c.title}](${c.file})`);
    out.push('');
  }

  const replicaRows = replicaTable(results);
  if (replicaRows !== null) {
    out.push('## Router replicas and faults');
    out.push('');
    out.push(
      "Fault times are seconds into the measured run (a restart is done when the replica listens, a NATS start when the server is ready). failed = not `ok` (any reason); cut = the response started streaming and ended without its final chunk; streaming at kill = responses whose first text came before the kill and whose end came after it; predicted-hit accuracy = the decision header's `match=m/t` of the deciding replica against the engine's cached_tokens / prompt_tokens (bench/stats/replica-facts.ts); router CPU = Σ over replicas of `cacheroute_process_cpu_seconds_total` over the run ÷ requests (– when a replica restarted); in-flight at end = each replica's /debug/endpoints once the engines were idle.",
    );
    out.push('');
    out.push(replicaRows);
    out.push('');
  }

  const variants = variantRatios(results);
  if (variants.length > 0) {
    out.push('## Variants side by side');
    out.push('');
    out.push(
      'Each cacheroute contender against the first contender of the same strategy in its block, same scenario and rate (variant ÷ base; hit rates as a difference in points):',
    );
    out.push('');
    const pts = (v: number | null): string => (v === null ? NA : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}`);
    out.push(
      mdTable(
        ['where', 'req/s', 'variant ÷ base', 'TTFT p50', 'TTFT p99', 'success', 'req/s done', 'engine tok hit', 'req hit (points)'],
        variants.map((v) => [
          v.where,
          v.qps === null ? 'trace' : String(v.qps),
          `${v.variant} ÷ ${v.base}`,
          fmtRatio(v.ttftP50),
          fmtRatio(v.ttftP99),
          fmtRatio(v.successRate),
          fmtRatio(v.reqPerS),
          `${fmtRatio(v.engineTokenHit)} (${pts(v.engineTokenHitDelta)})`,
          pts(v.requestHitDelta),
        ]),
      ),
    );
    out.push('');
  }

  const added = addedLatency(results);
  const decisions = results.filter((r) => r.routerDecision !== null && r.routerDecision.count > 0);
  if (added.length > 0 || decisions.length > 0) {
    out.push('## Router overhead');
    out.push('');
    if (added.length > 0) {
      out.push("TTFT p50 of cacheroute round-robin (Envoy + ext_proc) minus Envoy's own round-robin, same workload, lowest rate:");
      out.push('');
      out.push(
        mdTable(
          ['where', 'req/s', 'cacheroute RR p50', 'Envoy RR p50', 'added'],
          added.map((a) => [
            a.where,
            a.qps === null ? 'trace' : String(a.qps),
            fmtMs(a.routerP50),
            fmtMs(a.envoyP50),
            a.deltaMs === null ? NA : `${a.deltaMs.toFixed(1)} ms`,
          ]),
        ),
      );
      out.push('');
    }
    if (decisions.length > 0) {
      out.push(
        'Router-reported decision time (`cacheroute_decision_duration_seconds`, histogram estimate), and the router process over the measured run: event-loop delay (`cacheroute_event_loop_delay_seconds`) and CPU per request sent (`cacheroute_process_cpu_seconds_total`):',
      );
      out.push('');
      out.push(
        mdTable(
          ['run', 'decisions', 'mean', 'p50', 'p99', 'loop delay p99', 'loop delay max', 'router CPU / req'],
          decisions.map((r) => {
            const d = r.routerDecision as NonNullable<ExperimentResult['routerDecision']>;
            const us = (v: number | null): string => (v === null ? NA : `${v.toFixed(0)} µs`);
            const ms = (v: number | null | undefined): string => (v === null || v === undefined ? NA : `${v.toFixed(1)} ms`);
            const cpu = (v: number | null | undefined): string => (v === null || v === undefined ? NA : `${(v * 1000).toFixed(0)} µs`);
            return [
              r.id,
              String(d.count),
              us(d.meanUs),
              us(d.p50Us),
              us(d.p99Us),
              ms(d.loopDelayP99Ms),
              ms(d.loopDelayMaxMs),
              cpu(d.cpuMsPerRequest),
            ];
          }),
        ),
      );
      out.push('');
    }
  }

  const noteLines: string[] = [];
  for (const r of results) {
    const fails = Object.entries(r.summary.success.outcomes)
      .filter(([k]) => k !== 'ok')
      .map(([k, v]) => `${k} ${v}`);
    const statuses = Object.entries(r.summary.success.failedStatuses).map(([k, v]) => `HTTP ${k} ×${v}`);
    const notes = r.notes.filter(
      (n) =>
        !n.startsWith('router config') &&
        !n.startsWith('envoy config') &&
        !n.includes(' args: ') &&
        !/^warm-up: \d+ requests \(0 failed\)/.test(n),
    );
    const lag =
      r.summary.maxClientLagMs >= 20 ? [`client sent up to ${r.summary.maxClientLagMs.toFixed(0)} ms late (counted in latencies)`] : [];
    const parts = [
      ...(r.error ? [`error: ${r.error}`] : []),
      ...(fails.length ? [`failures: ${fails.join(', ')}`] : []),
      ...(statuses.length ? [statuses.join(', ')] : []),
      ...lag,
      ...notes,
    ];
    if (parts.length) noteLines.push(`- \`${r.id}\`: ${parts.join('; ')}`);
  }
  if (noteLines.length > 0) {
    out.push('## Run notes');
    out.push('');
    out.push(...noteLines);
    out.push('');
  }
  return out.join('\n');
}
