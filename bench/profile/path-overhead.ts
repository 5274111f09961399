/**
 * What each path in front of the engines adds to TTFT on an idle fleet: the same cached
 * prompt, one request at a time, straight to an engine, through Envoy alone (round robin),
 * through Envoy + cacheroute (this build, and optionally another build's dist) and through
 * sglang-router, in interleaved rounds (A B C D, A B C D, ...) so that a machine that gets
 * busier or quieter affects every path alike. Reports each path's median TTFT per round and
 * over all rounds, and the median minus the direct path's; with `--interleave`, also each
 * path paired with the first one (the median of their per-pass differences, with a 90%
 * interval).
 *
 *   node dist/bench/profile/path-overhead.js [--rounds 4] [--per-round 30] [--baseline DIR]
 *        [--out FILE] [--engines vllm] [--gap-ms 100] [--fresh-words 0] [--max-tokens 4]
 *        [--paths direct,envoy-only,cacheroute,sglang] [--interleave] [--engine-count N]
 *        [--alt-main FILE] [--split] [--in-process-worker]
 *
 * `--engines vllm`: the `real-vllm` presets' 2 real vLLM CPU engines instead of the simulated
 * low-load fleet, cacheroute configured as those presets run it.
 *
 * `--gap-ms`: the pause between two requests (the workloads' Poisson spacing at 1.5 req/s is
 * ~700 ms; the default keeps every process warm). `--fresh-words N`: each request appends N
 * words no earlier request had (a new question after the cached prefix, as in the workloads),
 * so every request also prefills new tokens. `--paths`: only these paths, by label, in that order.
 * `--interleave`: every path runs at once and consecutive requests rotate over them
 * (A B C D A B C D ...), so a machine whose speed drifts within a round (it does, by ±30%
 * over minutes here) shifts every path alike; `--rounds` × `--per-round` requests per path.
 *
 * `--split` (real engines): the engines on one core, this process and everything it starts on
 * the other, as in the `real-vllm-low-load-split` preset (`splitEngines`).
 * `--in-process-worker` (real engines): each engine's model worker inside its engine-core
 * process, as in the `real-vllm-low-load-inproc` preset (`inProcessWorkerEngines`).
 *
 * `sglang-null-hop`: sglang-router behind Envoy and a do-nothing ext_proc processor
 * (bench/contenders/null-processor.ts), i.e. the ext_proc hop alone; `sglang-null-hop-go`: the
 * same with the processor in Go (bench/contenders/null-processor-go, built with `go build`).
 * `--alt-main FILE`: one more path, `alt`, where FILE (started as the router is: `node FILE
 * serve --config CONFIG`) is the ext_proc processor behind the same Envoy config, e.g. the null
 * processor itself (dist/bench/contenders/null-processor.js).
 *
 * Not a bar: a diagnostic for where the low-load TTFT gap comes from.
 */
import { writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { deepMerge } from '../contenders/router-config.js';
import { startContender } from '../contenders/start-contender.js';
import type { ContenderSpec, EngineHandle, RunningContender } from '../contenders/types.js';
import { startEngineFleet } from '../harness/engines.js';
import { sleep } from '../../test/kit/managed-process.js';
import { streamRequest } from '../../test/kit/sse-request.js';
import { BENCH_MODEL, ENVOY_RR, SGLANG_CACHE_AWARE } from '../presets/building-blocks.js';
import { REAL_ENGINE_POLLING, REAL_VLLM_ENGINES } from '../presets/real-vllm.js';
import { inProcessWorkerEngines, SGLANG_BEHIND_NULL_HOP, SGLANG_BEHIND_NULL_HOP_GO, splitEngines } from '../presets/real-vllm-low-load.js';
import { replicaBlocks } from '../presets/replicas.js';
import { TINY_MODEL_NAME } from '../../test/kit/vllm-paths.js';
import { median as medianOrNull } from '../stats/percentiles.js';
import { pairedDifference, type PairedDifference } from '../stats/paired.js';
import type { BenchRequest } from '../workloads/types.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? (process.argv[i + 1] as string) : fallback;
}

interface Path {
  readonly label: string;
  /** undefined: straight to engine `direct` (default the first). */
  readonly spec?: ContenderSpec;
  readonly direct?: number;
}

const median = (xs: readonly number[]): number => medianOrNull(xs) ?? Number.NaN;

async function main(): Promise<void> {
  const rounds = Number(arg('rounds', '4'));
  const perRound = Number(arg('per-round', '30'));
  const baseline = arg('baseline', '');
  const altMain = arg('alt-main', '');
  const out = arg('out', '');
  const real = arg('engines', 'sim') === 'vllm';
  const gapMs = Number(arg('gap-ms', '100'));
  const freshWords = Number(arg('fresh-words', '0'));
  const maxTokens = Number(arg('max-tokens', '4'));
  const only = arg('paths', '')
    .split(',')
    .filter((x) => x !== '');
  const block = replicaBlocks(1).find((b) => b.name === 'low-load');
  if (block === undefined) throw new Error('no low-load block');
  const baseSetup = real ? REAL_VLLM_ENGINES : block.engines;
  // `--engine-count 1`: every path must use the one engine, so only the path differs.
  const counted = { ...baseSetup, count: Number(arg('engine-count', String(baseSetup.count))) };
  const split = process.argv.includes('--split');
  if (split && !real) throw new Error('--split needs --engines vllm');
  const inProcessWorker = process.argv.includes('--in-process-worker');
  if (inProcessWorker && !real) throw new Error('--in-process-worker needs --engines vllm');
  const splitOrNot = split ? splitEngines(counted) : counted;
  const setup = inProcessWorker ? inProcessWorkerEngines(splitOrNot) : splitOrNot;
  const model = real ? TINY_MODEL_NAME : BENCH_MODEL;
  const routerOverrides = real ? REAL_ENGINE_POLLING : {};
  const allPaths: Path[] = [
    { label: 'direct' },
    { label: 'direct-2', direct: 1 },
    { label: 'envoy-only', spec: ENVOY_RR },
    { label: 'cacheroute', spec: { kind: 'cacheroute', label: 'cacheroute', strategy: 'cache-aware', routerOverrides } },
    // Diagnostic: Envoy buffers the request body and keeps it (the router answers CONTINUE).
    {
      label: 'cacheroute-buffered',
      spec: { kind: 'cacheroute', label: 'cacheroute-buffered', strategy: 'cache-aware', routerOverrides, requestBodyMode: 'BUFFERED' },
    },
    // Diagnostic: the same router with no background work (no scrapes, no health checks).
    {
      label: 'cacheroute-no-polling',
      spec: {
        kind: 'cacheroute',
        label: 'cacheroute-no-polling',
        strategy: 'cache-aware',
        routerOverrides: { engineMetrics: { enabled: false }, health: { enabled: false } },
      },
    },
    // Diagnostic: the same router without its start-up warm-up (server.warmUpStreams 0).
    {
      label: 'cacheroute-no-warm-up',
      spec: {
        kind: 'cacheroute',
        label: 'cacheroute-no-warm-up',
        strategy: 'cache-aware',
        routerOverrides: deepMerge(routerOverrides, { server: { warmUpStreams: 0 } }),
      },
    },
    ...(baseline !== ''
      ? [
          {
            label: 'cacheroute-baseline',
            spec: { kind: 'cacheroute', label: 'cacheroute-baseline', strategy: 'cache-aware', checkout: baseline, routerOverrides },
          } as Path,
        ]
      : []),
    // Diagnostic: another ext_proc server behind the same Envoy config (`--alt-main FILE`,
    // started as the router is: `node FILE serve --config CONFIG`).
    ...(altMain !== ''
      ? [
          {
            label: 'alt',
            spec: { kind: 'cacheroute', label: 'alt', strategy: 'cache-aware', routerMain: altMain, routerOverrides },
          } as Path,
        ]
      : []),
    { label: 'sglang', spec: SGLANG_CACHE_AWARE },
    // Control: sglang-router behind Envoy and a do-nothing ext_proc processor (the hop alone).
    { label: 'sglang-null-hop', spec: SGLANG_BEHIND_NULL_HOP },
    { label: 'sglang-null-hop-go', spec: SGLANG_BEHIND_NULL_HOP_GO },
  ];
  // Without --paths, the direct paths to engines the fleet does not have are left out; with it,
  // the paths run in the order given (the first is the paired comparison's reference).
  const unknown = only.find((label) => !allPaths.some((p) => p.label === label));
  if (unknown !== undefined) throw new Error(`--paths: no path ${unknown}`);
  const paths =
    only.length === 0
      ? allPaths.filter((p) => (p.direct ?? 0) < setup.count)
      : only.map((label) => allPaths.find((p) => p.label === label) as Path);
  const beyond = paths.find((p) => (p.direct ?? 0) >= setup.count);
  if (beyond !== undefined) throw new Error(`path ${beyond.label} needs ${(beyond.direct ?? 0) + 1} engines, the fleet has ${setup.count}`);
  const fleet = await startEngineFleet(setup.count, setup.flags, model, setup);
  // ~1,000 words: one synthetic token each; the same text every time, so after the first
  // request every path reaches a warm engine and TTFT is the path plus one short prefill.
  const prompt = Array.from({ length: 1000 }, (_, i) => `w${i % 97}`).join(' ');
  let serial = 0;
  const nextRequest = (): BenchRequest => {
    serial++;
    // Words of the prompt's own vocabulary in an order no earlier request had: the same
    // token count every request, nothing reusable past the shared prefix.
    const fresh = Array.from({ length: freshWords }, (_, k) => `w${(serial * 31 + k * k * 7 + k) % 97}`).join(' ');
    const text = freshWords > 0 ? `${prompt} ${fresh}` : prompt;
    return {
      id: `p${serial}`,
      atMs: 0,
      api: 'completions',
      prompt: text,
      promptTokens: 1000 + freshWords,
      maxTokens,
      group: 'g',
      reusableTokens: 0,
    };
  };
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const ttft = new Map<string, number[][]>(paths.map((p) => [p.label, []]));
  // Every measured sample with the engine that served it (x-engine-id) and its cached tokens.
  const samples = new Map<string, { ttft: number; engine: string; cached: number }[]>(paths.map((p) => [p.label, []]));
  // --interleave: each pass's TTFT per path (null: failed), for the paired comparison.
  const passes: (number | null)[][] = [];
  /** Keeps a successful request's TTFT (and returns it; null for a failed request). */
  const record = (label: string, res: Awaited<ReturnType<typeof streamRequest>>, xs: number[]): number | null => {
    if (res.outcome !== 'ok' || res.ttftMs === null) return null;
    xs.push(res.ttftMs);
    samples.get(label)?.push({ ttft: res.ttftMs, engine: res.engine ?? '?', cached: res.cachedTokens ?? -1 });
    return res.ttftMs;
  };
  try {
    if (process.argv.includes('--interleave')) {
      const running: RunningContender[] = [];
      try {
        const urls: string[] = [];
        for (const p of paths) {
          if (p.spec === undefined) urls.push((fleet.engines[p.direct ?? 0] as EngineHandle).url);
          else {
            const c = await startContender(p.spec, { engines: fleet.engines, model, seed: 1 });
            running.push(c);
            urls.push(c.baseUrl);
          }
        }
        for (let i = 0; i < 3; i++)
          for (const url of urls) await streamRequest(nextRequest(), { baseUrl: url, model, timeoutMs: 10_000, agent });
        const xs = paths.map(() => [] as number[]);
        for (let i = 0; i < rounds * perRound; i++) {
          const pass = new Array<number | null>(paths.length).fill(null);
          // Rotate the order each pass as well, so no path always follows the same one.
          for (let k = 0; k < paths.length; k++) {
            const j = (k + i) % paths.length;
            await sleep(gapMs);
            pass[j] = record(
              (paths[j] as Path).label,
              await streamRequest(nextRequest(), { baseUrl: urls[j] as string, model, timeoutMs: 10_000, agent }),
              xs[j] as number[],
            );
          }
          passes.push(pass);
        }
        paths.forEach((p, j) => {
          const all = xs[j] as number[];
          for (let r = 0; r < rounds; r++) (ttft.get(p.label) as number[][]).push(all.slice(r * perRound, (r + 1) * perRound));
          process.stderr.write(`${p.label}: median ${median(all).toFixed(2)} ms\n`);
        });
      } finally {
        for (const c of running) await c.stop();
      }
    } else
      for (let r = 0; r < rounds; r++) {
        for (const p of paths) {
          let c: RunningContender | undefined;
          const engine = fleet.engines[p.direct ?? 0] as EngineHandle;
          try {
            if (p.spec !== undefined) c = await startContender(p.spec, { engines: fleet.engines, model, seed: 1 });
            const baseUrl = c?.baseUrl ?? engine.url;
            const xs: number[] = [];
            for (let i = 0; i < perRound + 3; i++) {
              const res = await streamRequest(nextRequest(), { baseUrl, model, timeoutMs: 10_000, agent });
              if (i >= 3) record(p.label, res, xs); // first 3: warm-up
              await sleep(gapMs);
            }
            (ttft.get(p.label) as number[][]).push(xs);
            process.stderr.write(`round ${r} ${p.label}: median ${median(xs).toFixed(2)} ms of ${xs.map((x) => x.toFixed(0)).join(' ')}\n`);
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
    interleave: process.argv.includes('--interleave'),
    gapMs,
    freshWords,
    maxTokens,
    engines: setup.label,
    engineCount: setup.count,
    split,
    inProcessWorker,
    baseline: baseline || null,
    ...(passes.length > 0
      ? {
          pairedWithFirstPath: pairedWithFirst(
            paths.map((p) => p.label),
            passes,
          ),
        }
      : {}),
    paths: paths.map((p) => {
      const all = (ttft.get(p.label) ?? []).flat();
      const m = median(all);
      const byEngine = new Map<string, number[]>();
      for (const x of samples.get(p.label) ?? []) {
        const list = byEngine.get(x.engine);
        if (list === undefined) byEngine.set(x.engine, [x.ttft]);
        else list.push(x.ttft);
      }
      const perEngine = Object.fromEntries([...byEngine].sort().map(([e, xs]) => [e, { n: xs.length, medianMs: median(xs) }]));
      const cached = (samples.get(p.label) ?? []).map((x) => x.cached);
      return {
        label: p.label,
        n: all.length,
        medianMs: m,
        overDirectMs: m - direct,
        perRoundMedianMs: (ttft.get(p.label) ?? []).map(median),
        perEngine,
        medianCachedTokens: median(cached),
      };
    }),
  };
  const text = JSON.stringify(report, null, 2);
  if (out !== '') writeFileSync(out, text);
  process.stdout.write(text + '\n');
}

/** Each path after the first, paired pass by pass with the first (bench/stats/paired.ts). */
function pairedWithFirst(
  labels: readonly string[],
  passes: readonly (readonly (number | null)[])[],
): ({ label: string; vs: string } & PairedDifference)[] {
  const column = (j: number): (number | null)[] => passes.map((pass) => pass[j] ?? null);
  return labels.slice(1).map((label, k) => ({ label, vs: labels[0] ?? '', ...pairedDifference(column(0), column(k + 1)) }));
}

main().catch((err: unknown) => {
  process.stderr.write(`path-overhead: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
