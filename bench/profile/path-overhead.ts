/**
 * What each path in front of the engines adds to TTFT on an idle fleet: the same cached
 * prompt, one request at a time, straight to an engine, through Envoy alone (round robin),
 * through Envoy + cacheroute (this build, and optionally another build's dist) and through
 * sglang-router, in interleaved rounds (A B C D, A B C D, ...) so that a machine that gets
 * busier or quieter affects every path alike. Reports each path's median TTFT per round and
 * over all rounds, and the median minus the direct path's.
 *
 *   node dist/bench/profile/path-overhead.js [--rounds 4] [--per-round 30] [--baseline DIR]
 *        [--out FILE] [--engines vllm]
 *
 * `--engines vllm`: the `real-vllm` presets' 2 real vLLM CPU engines instead of the simulated
 * low-load fleet, cacheroute configured as those presets run it.
 *
 * Not a bar: a diagnostic for where the low-load TTFT gap comes from.
 */
import { writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { deepMerge } from '../contenders/router-config.js';
import { startContender } from '../contenders/start-contender.js';
import type { ContenderSpec, EngineHandle, RunningContender } from '../contenders/types.js';
import { startEngineFleet } from '../harness/engines.js';
import { sleep } from '../harness/managed-process.js';
import { streamRequest } from '../harness/sse-request.js';
import { BENCH_MODEL, ENVOY_RR, SGLANG_CACHE_AWARE } from '../presets/building-blocks.js';
import { REAL_ENGINE_POLLING, REAL_VLLM_ENGINES } from '../presets/real-vllm.js';
import { replicaBlocks } from '../presets/replicas.js';
import { TINY_MODEL_NAME } from '../real-engine/vllm-paths.js';
import { quantileSorted } from '../stats/percentiles.js';
import type { BenchRequest } from '../workloads/types.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : fallback;
}

interface Path {
  readonly label: string;
  /** undefined: straight to the first engine. */
  readonly spec?: ContenderSpec;
}

const median = (xs: readonly number[]): number => quantileSorted([...xs].sort((a, b) => a - b), 0.5) ?? Number.NaN;

async function main(): Promise<void> {
  const rounds = Number(arg('rounds', '4'));
  const perRound = Number(arg('per-round', '30'));
  const baseline = arg('baseline', '');
  const out = arg('out', '');
  const real = arg('engines', 'sim') === 'vllm';
  const block = replicaBlocks(1).find((b) => b.name === 'low-load');
  if (block === undefined) throw new Error('no low-load block');
  const setup = real ? REAL_VLLM_ENGINES : block.engines;
  const model = real ? TINY_MODEL_NAME : BENCH_MODEL;
  const routerOverrides = real ? REAL_ENGINE_POLLING : {};
  const fleet = await startEngineFleet(setup.count, setup.flags, model, setup);
  const paths: Path[] = [
    { label: 'direct' },
    { label: 'envoy-only', spec: ENVOY_RR },
    { label: 'cacheroute', spec: { kind: 'cacheroute', label: 'cacheroute', strategy: 'cache-aware', routerOverrides } },
    // Diagnostic: the same router with no background work (no scrapes, no health checks).
    { label: 'cacheroute-no-polling', spec: { kind: 'cacheroute', label: 'cacheroute-no-polling', strategy: 'cache-aware', routerOverrides: { engineMetrics: { enabled: false }, health: { enabled: false } } } },
    // Diagnostic: the same router without its start-up warm-up (server.warmUpStreams 0).
    { label: 'cacheroute-no-warm-up', spec: { kind: 'cacheroute', label: 'cacheroute-no-warm-up', strategy: 'cache-aware', routerOverrides: deepMerge(routerOverrides, { server: { warmUpStreams: 0 } }) } },
    ...(baseline !== '' ? [{ label: 'cacheroute-baseline', spec: { kind: 'cacheroute', label: 'cacheroute-baseline', strategy: 'cache-aware', checkout: baseline, routerOverrides } } as Path] : []),
    { label: 'sglang', spec: SGLANG_CACHE_AWARE },
  ];
  // ~1,000 words: one synthetic token each; the same text every time, so after the first
  // request every path reaches a warm engine and TTFT is the path plus one short prefill.
  const prompt = Array.from({ length: 1000 }, (_, i) => `w${i % 97}`).join(' ');
  const req: BenchRequest = { id: 'p', atMs: 0, api: 'completions', prompt, promptTokens: 1000, maxTokens: 4, group: 'g', reusableTokens: 0 };
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const ttft = new Map<string, number[][]>(paths.map((p) => [p.label, []]));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const p of paths) {
        let c: RunningContender | undefined;
        const engine = fleet.engines[0] as EngineHandle;
        try {
          if (p.spec !== undefined) c = await startContender(p.spec, { engines: fleet.engines, model, seed: 1 });
          const baseUrl = c?.baseUrl ?? engine.url;
          const xs: number[] = [];
          for (let i = 0; i < perRound + 3; i++) {
            const res = await streamRequest(req, { baseUrl, model, timeoutMs: 10_000, agent });
            if (i >= 3 && res.outcome === 'ok' && res.ttftMs !== null) xs.push(res.ttftMs); // first 3: warm-up
            await sleep(100);
          }
          (ttft.get(p.label) as number[][]).push(xs);
          process.stderr.write(`round ${r} ${p.label}: median ${median(xs).toFixed(2)} ms of ${xs.map((x) => x.toFixed(0)).join(" ")}\n`);
        } finally {
          await c?.stop();
        }
      }
    }
  } finally {
    agent.destroy();
    await fleet.stop();
  }
  const direct = median((ttft.get('direct') ?? []).flat());
  const report = {
    rounds,
    perRound,
    engines: setup.label,
    baseline: baseline || null,
    paths: paths.map((p) => {
      const all = (ttft.get(p.label) ?? []).flat();
      const m = median(all);
      return { label: p.label, n: all.length, medianMs: m, overDirectMs: m - direct, perRoundMedianMs: (ttft.get(p.label) ?? []).map(median) };
    }),
  };
  const text = JSON.stringify(report, null, 2);
  if (out !== '') writeFileSync(out, text);
  process.stdout.write(text + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`path-overhead: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
