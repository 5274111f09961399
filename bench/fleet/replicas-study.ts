/**
 * The replicas study (`npm run bench -- fleet replicas`): 1, 2, 4 and 8 router replicas
 * behind a proxy that spreads requests over them in turn (a Kubernetes Service, Envoy's
 * round-robin cluster), with and without state sharing, the replication hop 10 to 500 ms.
 * Metric: the follow-up turns' prefix-cache hit rate against one replica's, and TTFT.
 *
 * Why: SMG measured the follow-up hit of an agentic workload fall from 0.94 to 0.66 at 8
 * gateways with per-gateway state (smg-project/smg#2438); cacheroute's replicas exchange load
 * reports and prefix-index batches (src/replication/), which the simulator carries over a
 * delayed hop (src/simulate/replica-link.ts). The no-replication rows show the fall; the
 * sticky-by-session row shows what a session-affine proxy gives without sharing.
 */
import { agentic, fleet } from './studies.js';
import type { FleetCell, FleetStudy, StudyRow } from './study.js';
import type { ScenarioSpec } from '../workloads/scenario.js';

const ENGINES = 16;
const REPLICAS = [1, 2, 4, 8];
const DELAYS_MS = [10, 50, 200, 500];
const BASE = 'cacheroute:cache-aware';
const SHARED = 'cacheroute:cache-aware+replicated';
const NO_SHARING = 'no sharing';

/** Chat sessions whose every turn resends the whole conversation (the history is the reusable part). */
const chat: ScenarioSpec = {
  kind: 'multi-turn',
  label: 'multi-turn',
  api: 'chat',
  sessions: 8 * ENGINES,
  turns: 5,
  systemPrompts: 2 * ENGINES,
  systemPromptTokens: 500,
  userTokens: 200,
  outputTokens: 64,
  thinkMs: 1000,
  arrival: { kind: 'poisson', qps: 0.5 * ENGINES },
};

function withoutThinkTime(s: ScenarioSpec): ScenarioSpec {
  return s.kind === 'agentic' ? { ...s, thinkMs: 0 } : s;
}

/** Name, workload, whether its requests carry a session key (for the sticky row). */
const WORKLOADS: readonly (readonly [string, ScenarioSpec, boolean])[] = [
  [`agentic, ${ENGINES} engines, 2 arrivals/s/engine`, agentic(ENGINES, 2), true],
  // The next turn leaves the moment the last one ended: the hop races the follow-up.
  [`agentic without think time, ${ENGINES} engines`, withoutThinkTime(agentic(ENGINES, 2)), true],
  [`multi-turn chat, ${ENGINES} engines`, chat, false],
];

const mode = (delayMs: number | undefined): string => (delayMs === undefined ? NO_SHARING : `shared, ${delayMs} ms hop`);

function cells(): FleetCell[] {
  const out: FleetCell[] = [];
  for (const [name, scenario, sessions] of WORKLOADS) {
    const cell = (m: string, label: string, contender: string, sim: FleetCell['sim']): FleetCell => ({
      group: name,
      label: `${label}, ${m}`,
      fleet: fleet(ENGINES),
      scenario,
      contenders: [contender],
      sim,
    });
    for (const r of REPLICAS) out.push(cell(NO_SHARING, `${r} replicas`, BASE, { replicas: r }));
    if (sessions) out.push(cell(NO_SHARING, '8 replicas, sticky by session', BASE, { replicas: 8, replicaSpread: 'session' }));
    for (const d of DELAYS_MS)
      for (const r of REPLICAS.filter((n) => n > 1))
        out.push(cell(mode(d), `${r} replicas`, SHARED, { replicas: r, replicationDelayMs: d }));
  }
  return out;
}

const pct = (v: number): string => (Number.isFinite(v) ? `${(v * 100).toFixed(1)}%` : '—');
const pts = (v: number): string => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${(v * 100).toFixed(1)}` : '—');

/** Per workload: follow-up hit (points against one replica) and TTFT by replicas × sharing mode; the 8-replica, 200 ms bar. */
function report(rows: readonly StudyRow[]): { sections: string[]; misses: string[] } {
  const sections: string[] = [];
  const misses: string[] = [];
  for (const [name] of WORKLOADS) {
    const find = (m: string, cell: string) => rows.find((r) => r.group === name && r.cell === `${cell}, ${m}`)?.summary;
    const one = find(NO_SHARING, '1 replicas');
    if (one === undefined) continue;
    const modes = [NO_SHARING, ...DELAYS_MS.map(mode)];
    sections.push(`## ${name}: follow-up hit rate against one replica`, '');
    sections.push(
      `One replica: follow-up hit ${pct(one.followUpHitRate)} (${one.followUps} follow-up turns), TTFT p50 ${one.ttftP50Ms.toFixed(0)} ms, p99 ${one.ttftP99Ms.toFixed(0)} ms. Cells: follow-up hit (points against one replica) · TTFT p50 / p99 ms.`,
      '',
    );
    sections.push(`| replicas | ${modes.join(' | ')} |`, `|---|${modes.map(() => '---|').join('')}`);
    for (const r of REPLICAS.filter((n) => n > 1)) {
      const cellsOf = modes.map((m) => {
        const s = find(m, `${r} replicas`);
        return s === undefined
          ? '—'
          : `${pct(s.followUpHitRate)} (${pts(s.followUpHitRate - one.followUpHitRate)}) · ${s.ttftP50Ms.toFixed(0)} / ${s.ttftP99Ms.toFixed(0)}`;
      });
      sections.push(`| ${r} | ${cellsOf.join(' | ')} |`);
    }
    const sticky = find(NO_SHARING, '8 replicas, sticky by session');
    if (sticky !== undefined)
      sections.push(
        '',
        `8 replicas, no sharing, proxy sticky by session key: follow-up hit ${pct(sticky.followUpHitRate)} (${pts(sticky.followUpHitRate - one.followUpHitRate)}), TTFT p50 ${sticky.ttftP50Ms.toFixed(0)} / p99 ${sticky.ttftP99Ms.toFixed(0)} ms.`,
      );
    sections.push('');
    const bar = find(mode(200), '8 replicas');
    if (bar !== undefined && !(one.followUpHitRate - bar.followUpHitRate <= 0.02))
      misses.push(
        `${name}: 8 replicas at a 200 ms hop: follow-up hit ${pct(bar.followUpHitRate)} vs one replica's ${pct(one.followUpHitRate)} (${pts(bar.followUpHitRate - one.followUpHitRate)} points; bar: within 2)`,
      );
  }
  return { sections, misses };
}

export const FLEET_REPLICAS: FleetStudy = {
  name: 'replicas',
  description: `Router replicas: 1, 2, 4 and 8 replicas of cacheroute's default (cache-aware) behind a proxy that sends requests to them in turn, each replica its own Scheduler and data layer built by the same composition code, ${ENGINES} engines; without state sharing, and with the replication layer's load reports and prefix-index batches carried over a 10, 50, 200 or 500 ms hop. Follow-up turns' hit rate against one replica (SMG, smg-project/smg#2438: 0.94 → 0.66 at 8 gateways with per-gateway state) and TTFT.`,
  seed: 1,
  estimatedMinutes: 2,
  notes: [
    'Proxy: round-robin over replicas (each request of a session may reach another replica); one row has it sticky by session key instead.',
    "Replication: the real LoadShare (every load.intervalMs = 200 ms) and IndexShare (flushed every index.flushIntervalMs = 50 ms) with NATS replaced by the hop; every replica reads the index batches, its own too, in one stream order. Each replica hears its own tickets' ends from its own access log (completion forwarding is not modelled).",
    'Follow-up turn: a request sent after an earlier one of its session finished (think time: agentic 200 ms or none, chat 1 s). Hit rate = cached / prompt tokens over them.',
    'The multi-turn chat workload carries no session key, so it has no sticky row.',
    'Bar (issue #26): 8 replicas at a 200 ms hop within 2 points of one replica.',
  ],
  cells: cells(),
  report,
};
