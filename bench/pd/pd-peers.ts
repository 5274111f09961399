/**
 * P/D side by side, real time, on the same simulated engines (two prefill, two decode,
 * gpu-like, vLLM's kv_transfer_params exchange): aggregated cacheroute (the four engines as
 * `both`, strategy cache-aware, behind Envoy), disaggregated cacheroute (the P/D graph of
 * examples/router-pd.yaml, pd-sidecars on the decode engines) with the decider on (the
 * measured defaults) and off (split always), and vllm-router 0.1.17 in its P/D mode
 * (`--vllm-pd-disaggregation --kv-connector nixl`, policy cache_aware). The same seeded
 * open-loop workload of mixed prompt lengths goes to each in turn, engine caches reset in
 * between; rounds alternate the order (ABCD, DCBA) so drift hits every contender alike.
 *
 *   npx tsc -p tsconfig.json && flock /tmp/cacheroute-heavy.lock node dist/bench/pd/pd-peers.js [--rounds 2] [--seconds 30] [--rate 6]
 *
 * Reported per contender (pooled over rounds): TTFT p50/p99, inter-token latency
 * ((end − first token) / (tokens − 1), p50/p99 over requests), output tokens per second,
 * failures; and the ratios disaggregated cacheroute ÷ vllm-router P/D and ÷ aggregated, pooled
 * and as the range of the per-round ratios (the run-to-run interval: a difference inside it is
 * noise). The decider's queue estimate drains at the engines' prefill rate: the gpu-like
 * profile's 6,500 tokens/s at time-scale 0.5 is 13,000.
 * Bounded: rate × seconds requests per run, at most 64 in flight, 60 s per request.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { promptFromBlockIds } from '../../src/simulate/block-prompt.js';
import { seededRng } from '../../src/util/rng.js';
import { startEnvoy } from '../../test/kit/envoy-process.js';
import { httpRequest, postJson } from '../../test/kit/http-client.js';
import { startPdStack } from '../../test/kit/pd-stack.js';
import { routerConfigDoc, startEngines, startRouter } from '../../test/kit/processes.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { streamRequest, type StreamedRequest, type StreamResult } from '../../test/kit/sse-request.js';
import { quantile } from '../../src/simulate/summary.js';
import { startPeer } from '../contenders/start-contender.js';
import { arg } from '../micro/cli-arg.js';
import { writeJson } from '../report/result-files.js';
import { collectRunInfo } from '../report/run-info.js';

const MODEL = 'sim-model';
const ENGINE_FLAGS = { profile: 'gpu-like', 'time-scale': 0.5, 'kv-connector': 'nixl', 'max-model-len': 32768 } as const;
const MAX_INFLIGHT = 64;
/** The engines' prefill rate (gpu-like: 2,048 tokens per 315 ms step, at time-scale 0.5). */
const PREFILL_TOKENS_PER_S = 13_000;

interface Running {
  readonly url: string;
  stop(): Promise<void>;
}

/** 75 % short turns (100–600 tokens), 25 % long documents (2,000–6,000), half of them behind one of 10 shared 1,500-token prefixes. */
function workload(seed: number, n: number): StreamedRequest[] {
  const rng = seededRng(seed);
  const cache = new Map<number, string>();
  return Array.from({ length: n }, (_, i) => {
    const long = rng.next() < 0.25;
    const tokens = long ? Math.round(2000 * 3 ** rng.next()) : Math.round(100 * 6 ** rng.next());
    const group = long && rng.next() < 0.5 ? rng.int(10) : -1;
    const ids = group >= 0 ? Array.from({ length: 94 }, (_, b) => 1_000_000 + group * 1000 + b) : [];
    return {
      api: 'completions',
      prompt: promptFromBlockIds(ids, 16, Math.max(tokens, ids.length * 16 + 50), seed * 100_000 + i + 1, cache),
      maxTokens: 32 + rng.int(97),
    };
  });
}

interface Row {
  readonly contender: string;
  readonly round: number;
  readonly results: readonly StreamResult[];
  readonly wallMs: number;
  /** Requests the prefill engines served (prefill legs, or whole requests when aggregated), and KV loads on the decode engines. */
  readonly prefillServed: number;
  readonly kvLoads: number;
}

async function drive(
  url: string,
  reqs: readonly StreamedRequest[],
  ratePerS: number,
): Promise<{ results: StreamResult[]; wallMs: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_INFLIGHT + 8 });
  const rng = seededRng(7);
  const t0 = performance.now();
  const pending = new Set<Promise<void>>();
  const results: StreamResult[] = [];
  let due = 0;
  for (const r of reqs) {
    due += (-Math.log(1 - rng.next()) * 1000) / ratePerS;
    const wait = t0 + due - performance.now();
    if (wait > 1) await new Promise((res) => setTimeout(res, wait));
    if (pending.size >= MAX_INFLIGHT) await Promise.race(pending);
    const p = streamRequest(r, { baseUrl: url, model: MODEL, timeoutMs: 60_000, agent }).then((x) => {
      results.push(x);
    });
    pending.add(p);
    void p.finally(() => pending.delete(p));
  }
  await Promise.all(pending);
  agent.destroy();
  return { results, wallMs: performance.now() - t0 };
}

/** The simulator's nearest-rank quantile, so these figures read like the fleet study's. */
function q(xs: number[], p: number): number {
  return quantile(
    xs.sort((a, b) => a - b),
    p,
  );
}

interface Figures {
  readonly requests: number;
  readonly failed: number;
  readonly ttftP50Ms: number;
  readonly ttftP99Ms: number;
  readonly itlP50Ms: number;
  readonly itlP99Ms: number;
  readonly outputTokensPerS: number;
  readonly prefillServed: number;
  readonly kvLoads: number;
}

function figures(rows: readonly Row[]): Figures {
  const ttft: number[] = [];
  const itl: number[] = [];
  let tokens = 0;
  let wall = 0;
  let failed = 0;
  let n = 0;
  for (const row of rows) {
    wall += row.wallMs;
    for (const r of row.results) {
      n++;
      if (r.outcome !== 'ok' || r.ttftMs === null || r.e2eMs === null) {
        failed++;
        continue;
      }
      ttft.push(r.ttftMs);
      tokens += r.outputTokens;
      if (r.outputTokens > 1) itl.push((r.e2eMs - r.ttftMs) / (r.outputTokens - 1));
    }
  }
  return {
    requests: n,
    failed,
    ttftP50Ms: q(ttft, 0.5),
    ttftP99Ms: q(ttft, 0.99),
    itlP50Ms: q(itl, 0.5),
    itlP99Ms: q(itl, 0.99),
    outputTokensPerS: wall > 0 ? tokens / (wall / 1000) : 0,
    prefillServed: rows.reduce((a, r) => a + r.prefillServed, 0),
    kvLoads: rows.reduce((a, r) => a + r.kvLoads, 0),
  };
}

async function startVllmRouterPd(prefill: readonly string[], decode: readonly string[]): Promise<Running> {
  const peer = await startPeer(
    { kind: 'vllm-router', label: 'pd', policy: 'cache_aware', pd: { prefill, decode }, extraArgs: ['--kv-connector', 'nixl'] },
    { engines: [], model: MODEL, seed: 0 },
  );
  return { url: peer.baseUrl, stop: peer.stop };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const rounds = Number(arg(args, '--rounds') ?? 2);
  const seconds = Number(arg(args, '--seconds') ?? 30);
  const rate = Number(arg(args, '--rate') ?? 6);
  const out = arg(args, '--out') ?? join('bench', 'results', 'pd-peers');
  const info = collectRunInfo(REPO_ROOT);
  const prefillFleet = await startEngines({ count: 2, flags: ENGINE_FLAGS });
  const decodeFleet = await startEngines({ count: 2, flags: ENGINE_FLAGS });
  const prefill = prefillFleet.engines.map((e) => `127.0.0.1:${e.port}`);
  const decode = decodeFleet.engines.map((e) => `127.0.0.1:${e.port}`);
  const all = [...prefillFleet.engines, ...decodeFleet.engines];
  const reset = (): Promise<unknown> => Promise.all(all.map((e) => postJson(`${e.url}/admin/reset`, {})));

  const contenders: { label: string; start: () => Promise<Running> }[] = [
    {
      label: 'aggregated cacheroute (cache-aware)',
      start: async () => {
        const router = await startRouter({
          name: 'router-agg',
          config: routerConfigDoc([...prefill, ...decode], { strategy: 'cache-aware' }),
        });
        const envoy = await startEnvoy({ variant: 'override-host', engines: [...prefill, ...decode], routerAddress: router.grpcAddress });
        return {
          url: envoy.url,
          stop: async () => {
            await envoy.stop();
            await router.stop();
          },
        };
      },
    },
    {
      label: 'disaggregated cacheroute (decider on)',
      start: async () => {
        const pd = await startPdStack({ prefill, decode, connector: 'nixl', handler: { prefillTokensPerSecond: PREFILL_TOKENS_PER_S } });
        return { url: pd.envoy.url, stop: pd.stop };
      },
    },
    {
      label: 'disaggregated cacheroute (decider off: split always)',
      start: async () => {
        const pd = await startPdStack({ prefill, decode, connector: 'nixl', handler: { split: 'always' } });
        return { url: pd.envoy.url, stop: pd.stop };
      },
    },
    {
      label: 'vllm-router 0.1.17 P/D (nixl, cache_aware)',
      start: () =>
        startVllmRouterPd(
          prefillFleet.engines.map((e) => e.url),
          decodeFleet.engines.map((e) => e.url),
        ),
    },
  ];
  const rows: Row[] = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 === 1 ? contenders : [...contenders].reverse();
      const reqs = workload(round, Math.round(rate * seconds));
      for (const c of order) {
        await reset();
        const running = await c.start();
        try {
          const { results, wallMs } = await drive(running.url, reqs, rate);
          const stats = async (url: string): Promise<{ requestsServed: number; kvTransfers: number }> =>
            (await httpRequest(`${url}/stats`)).json() as { requestsServed: number; kvTransfers: number };
          const ps = await Promise.all(prefillFleet.engines.map((e) => stats(e.url)));
          const ds = await Promise.all(decodeFleet.engines.map((e) => stats(e.url)));
          const prefillServed = ps.reduce((a, x) => a + x.requestsServed, 0);
          const kvLoads = ds.reduce((a, x) => a + x.kvTransfers, 0);
          rows.push({ contender: c.label, round, results, wallMs, prefillServed, kvLoads });
          const f = figures([rows.at(-1)!]);
          process.stderr.write(
            `round ${round} ${c.label}: ttft p50 ${f.ttftP50Ms.toFixed(0)} p99 ${f.ttftP99Ms.toFixed(0)} itl p50 ${f.itlP50Ms.toFixed(1)} tok/s ${f.outputTokensPerS.toFixed(0)} failed ${f.failed}\n`,
          );
        } finally {
          await running.stop();
        }
      }
    }
  } finally {
    await prefillFleet.stop();
    await decodeFleet.stop();
  }
  const table = contenders.map((c) => ({ contender: c.label, ...figures(rows.filter((r) => r.contender === c.label)) }));
  const [agg, on, off, vr] = table;
  const ratio = (a: Figures, b: Figures): Record<string, number> => ({
    ttftP50: a.ttftP50Ms / b.ttftP50Ms,
    ttftP99: a.ttftP99Ms / b.ttftP99Ms,
    itlP50: a.itlP50Ms / b.itlP50Ms,
    throughput: a.outputTokensPerS / b.outputTokensPerS,
  });
  const pairs: [string, Figures, Figures, string, string][] = [
    ['decider on ÷ vllm-router P/D', on!, vr!, contenders[1]!.label, contenders[3]!.label],
    ['decider off ÷ vllm-router P/D', off!, vr!, contenders[2]!.label, contenders[3]!.label],
    ['decider on ÷ aggregated', on!, agg!, contenders[1]!.label, contenders[0]!.label],
    ['decider off ÷ aggregated', off!, agg!, contenders[2]!.label, contenders[0]!.label],
  ];
  const ratios = Object.fromEntries(pairs.map(([k, a, b]) => [k, ratio(a, b)]));
  // Per round: the same ratio on that round's runs alone; its min–max over rounds is the interval.
  const perRound = Object.fromEntries(
    pairs.map(([k, , , a, b]) => {
      const rs: Record<string, number>[] = [];
      for (let round = 1; round <= rounds; round++) {
        const fa = figures(rows.filter((r) => r.round === round && r.contender === a));
        const fb = figures(rows.filter((r) => r.round === round && r.contender === b));
        rs.push(ratio(fa, fb));
      }
      return [k, rs];
    }),
  );
  const command = `node dist/bench/pd/pd-peers.js --rounds ${rounds} --seconds ${seconds} --rate ${rate}`;
  mkdirSync(out, { recursive: true });
  writeJson(
    join(out, 'run.json'),
    { kind: 'cacheroute-pd-peers', command, engines: { prefill: 2, decode: 2, flags: ENGINE_FLAGS }, rounds, seconds, rate, ...info },
    REPO_ROOT,
  );
  writeJson(join(out, 'results.json'), { table, ratios, perRound }, REPO_ROOT);
  const ms = (v: number): string => `${Math.round(v)} ms`;
  const md = [
    '# P/D side by side on the same simulated engines (real time)',
    '',
    `- commit \`${String(info.gitCommit).slice(0, 7)}\`${info.gitDirty.length > 0 ? ' (uncommitted changes)' : ''}; \`${command}\`; load average at start ${info.loadAvgAtStart.join(' ')} on ${info.cpus} cores (shared machine).`,
    `- engines: 2 prefill + 2 decode sim engines, ${JSON.stringify(ENGINE_FLAGS)}; workload: ${Math.round(rate * seconds)} requests per run at ${rate} req/s (Poisson), 75 % short (100–600 tokens), 25 % long (2,000–6,000, half behind one of 10 shared prefixes), 32–128 output tokens, streamed; caches reset before each run; ${rounds} rounds, order alternating.`,
    '- aggregated: the same four engines as `both`. ITL = (end − first token) / (tokens − 1) per request. Open loop: output tokens/s follows the offered load unless a contender falls behind it.',
    "- served by prefill engines / KV loads: the engines' own counters (`/stats`), summed over rounds: what each router really sent where.",
    '',
    '| contender | requests | failed | TTFT p50 | TTFT p99 | ITL p50 | ITL p99 | output tok/s | served by prefill engines | KV loads on decode engines |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...table.map(
      (t) =>
        `| ${t.contender} | ${t.requests} | ${t.failed} | ${ms(t.ttftP50Ms)} | ${ms(t.ttftP99Ms)} | ${t.itlP50Ms.toFixed(1)} ms | ${t.itlP99Ms.toFixed(1)} ms | ${t.outputTokensPerS.toFixed(0)} | ${t.prefillServed} | ${t.kvLoads} |`,
    ),
    '',
    `Ratios pooled over rounds, in brackets the range of the ${rounds} per-round ratios (run-to-run interval).`,
    '',
    '| ratio | TTFT p50 | TTFT p99 | ITL p50 | throughput |',
    '| --- | --- | --- | --- | --- |',
    ...Object.entries(ratios).map(([k, v]) => {
      const cell = (f: string): string => {
        const xs = perRound[k]!.map((r) => r[f]!);
        return `${v[f]!.toFixed(2)}× [${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}]`;
      };
      return `| ${k} | ${cell('ttftP50')} | ${cell('ttftP99')} | ${cell('itlP50')} | ${cell('throughput')} |`;
    }),
    '',
  ].join('\n');
  writeFileSync(join(out, 'results.md'), md);
  process.stderr.write(md);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
