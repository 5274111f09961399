/**
 * Fidelity of the fleet simulator: the runs of a committed real-time preset (the HTTP
 * simulator's engines behind Envoy and `cacheroute serve`), replayed in the fleet simulator
 * with the same workload (same seed), the same engine model settings and the same router
 * document, side by side: TTFT p50/p99 and the engines' token hit rate, and whether each is
 * within 10%. Only cacheroute contenders on simulated engines are replayed.
 *
 *   npm run bench -- fleet fidelity [--real bench/results/seed-table] [--out bench/results/fleet-fidelity]
 */
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { EngineModelConfig } from '../../src/simulate/engine/batching-engine.js';
import { engineModelProfile } from '../../src/simulate/engine/profiles.js';
import { simulate } from '../../src/simulate/fleet-simulator.js';
import { routerContender } from '../../src/simulate/router-policy.js';
import { expandPreset } from '../presets/expand.js';
import { findPreset } from '../presets/index.js';
import type { EngineFlags } from '../presets/types.js';
import { writeJson } from '../report/result-files.js';
import { collectRunInfo } from '../report/run-info.js';
import { buildWorkload } from '../workloads/scenario.js';
import { simRequests } from './sim-requests.js';

const FLAG_KEYS: Readonly<Record<string, keyof EngineModelConfig>> = {
  'block-size': 'blockSize',
  'kv-cache-blocks': 'kvCacheBlocks',
  'max-num-seqs': 'maxNumSeqs',
  'max-batched-tokens': 'maxBatchedTokens',
  'max-num-batched-tokens': 'maxBatchedTokens',
  'step-overhead-ms': 'stepOverheadMs',
  'prefill-ms-per-token': 'prefillMsPerToken',
  'decode-ms-per-seq': 'decodeMsPerSeq',
  'prefill-context-ms-per-ktoken': 'prefillContextMsPerKToken',
  'decode-context-ms-per-ktoken': 'decodeContextMsPerKToken',
  'time-scale': 'timeScale',
};

/** The engine model an HTTP-simulator flag set describes (profile first, then the flags). */
export function modelFromFlags(flags: EngineFlags): EngineModelConfig | undefined {
  const base = engineModelProfile(String(flags['profile'] ?? 'vllm-cpu-tiny'));
  if (base === undefined) return undefined;
  const out: Record<string, number> = { ...base };
  for (const [k, v] of Object.entries(flags)) {
    const key = FLAG_KEYS[k];
    if (key !== undefined) out[key] = Number(v);
    else if (k !== 'profile') return undefined; // a flag the fleet simulator does not model: not comparable
  }
  return out as unknown as EngineModelConfig;
}

interface RealRun {
  readonly id: string;
  readonly summary: { ttftMs: { p50: number; p99: number }; hits?: { engineTokenHitRate?: number } };
}

export function runFidelity(argv: readonly string[], repoRoot: string, log: (m: string) => void): number {
  const arg = (name: string, dflt: string): string => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : dflt;
  };
  const realDir = resolve(repoRoot, arg('real', 'bench/results/seed-table'));
  const outDir = resolve(repoRoot, arg('out', 'bench/results/fleet-fidelity'));
  const results = JSON.parse(readFileSync(join(realDir, 'results.json'), 'utf8')) as { preset: string; seed: number; runs: RealRun[] };
  const preset = findPreset(results.preset);
  if (preset === undefined) {
    log(`preset ${results.preset} is not at HEAD`);
    return 2;
  }
  const real = new Map(results.runs.map((r) => [r.id, r]));
  const rows: Record<string, unknown>[] = [];
  const md = [
    `# Fleet simulator fidelity against \`${results.preset}\``,
    '',
    `The runs of \`${realDir.slice(repoRoot.length + 1)}\` (HTTP simulator engines behind Envoy and cacheroute, real time) replayed in the fleet simulator with the same workload (seed ${results.seed}), engine model and router settings. Reproduce: \`npm run bench -- fleet fidelity --real ${realDir.slice(repoRoot.length + 1)}\`.`,
    '',
    '| run | TTFT p50 real / sim ms | ratio | TTFT p99 real / sim ms | ratio | hit rate real / sim | ratio | all within 10% |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const e of expandPreset(preset)) {
    const r = real.get(e.id);
    if (r === undefined || e.contender.kind !== 'cacheroute' || (e.engines.kind ?? 'sim') !== 'sim') continue;
    if (e.engineActions !== undefined || e.faults !== undefined || (e.contender.replicas ?? 1) > 1) continue;
    const model = modelFromFlags(e.engines.flags);
    if (model === undefined) continue;
    const workload = buildWorkload(e.scenario, results.seed + (e.seedOffset ?? 0), repoRoot);
    const fleet = Array.from({ length: e.engines.count }, () => ({ model }));
    const doc = { strategy: e.contender.strategy, ...(e.contender.routerOverrides ?? {}) };
    const s = simulate(simRequests(workload), fleet, routerContender(e.contender.label, { document: doc }), { seed: results.seed }).summary;
    const realHit = r.summary.hits?.engineTokenHitRate ?? Number.NaN;
    const q = [s.ttftP50Ms / r.summary.ttftMs.p50, s.ttftP99Ms / r.summary.ttftMs.p99, s.hitRate / realHit];
    // A hit rate near zero on both sides is a match whatever its ratio.
    const ok =
      q[0]! >= 0.9 &&
      q[0]! <= 1.1 &&
      q[1]! >= 0.9 &&
      q[1]! <= 1.1 &&
      ((q[2]! >= 0.9 && q[2]! <= 1.1) || Math.abs(s.hitRate - realHit) < 0.02);
    rows.push({
      id: e.id,
      real: { p50: r.summary.ttftMs.p50, p99: r.summary.ttftMs.p99, hitRate: realHit },
      sim: { p50: s.ttftP50Ms, p99: s.ttftP99Ms, hitRate: s.hitRate },
      within10: ok,
    });
    md.push(
      `| ${e.id} | ${r.summary.ttftMs.p50.toFixed(0)} / ${s.ttftP50Ms.toFixed(0)} | ${q[0]!.toFixed(2)} | ${r.summary.ttftMs.p99.toFixed(0)} / ${s.ttftP99Ms.toFixed(0)} | ${q[1]!.toFixed(2)} | ${realHit.toFixed(3)} / ${s.hitRate.toFixed(3)} | ${q[2]!.toFixed(2)} | ${ok ? 'yes' : 'no'} |`,
    );
    log(
      `${e.id}: p50 ${r.summary.ttftMs.p50.toFixed(0)}/${s.ttftP50Ms.toFixed(0)} p99 ${r.summary.ttftMs.p99.toFixed(0)}/${s.ttftP99Ms.toFixed(0)} hit ${realHit.toFixed(3)}/${s.hitRate.toFixed(3)}`,
    );
  }
  md.push(
    '',
    `${rows.filter((r) => r['within10'] === true).length} of ${rows.length} runs within 10% on all three figures.`,
    '',
    "What the fleet simulator leaves out: the Envoy and ext_proc hop and the client (a few ms per request), the HTTP simulator's event-loop jitter and SSE writes, and scrape costs; the real-time runs have those plus the shared machine's noise.",
    '',
  );
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'results.md'), md.join('\n'));
  writeJson(join(outDir, 'results.json'), { real: realDir, preset: results.preset, seed: results.seed, rows }, repoRoot);
  writeJson(
    join(outDir, 'run.json'),
    { command: ['npm', 'run', 'bench', '--', 'fleet', 'fidelity', ...argv], info: collectRunInfo(repoRoot) },
    repoRoot,
  );
  return 0;
}
