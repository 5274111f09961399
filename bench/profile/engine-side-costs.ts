/**
 * What a real vLLM engine's TTFT pays for two things a router in front of it can cause, one
 * request at a time, straight to the engine (no router, no Envoy):
 * - `scrape-same` / `scrape-other`: a GET of this engine's /metrics (or the other engine's)
 *   started at a random moment in the first SCRAPE_WINDOW_MS after the request, when its
 *   prompt is being read and prefilled. A vLLM page costs its API server ~13 ms of CPU, and
 *   cacheroute scrapes an engine soon after it routes a request there;
 * - `chunked`: the body sent as Envoy forwards a FULL_DUPLEX_STREAMED body, chunked (no
 *   content-length) and written after the headers, instead of content-length in one write.
 * Each pass sends one request per condition (`plain` first in the rotation on pass 0, order
 * rotated every pass, engines alternated per pass), each on a fresh question after the same
 * cached prefix, so the conditions are paired pass by pass (bench/stats/paired.ts). Not a
 * bar: evidence on where the low-load TTFT gap does not come from.
 *
 *   node dist/bench/profile/engine-side-costs.js [--passes 60] [--gap-ms 700]
 *        [--in-process-worker] [--seed 1] [--out FILE]
 */
import { writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { parseArgs } from 'node:util';
import { seededRng } from '../../src/util/rng.js';
import { httpText, startEngineFleet } from '../harness/engines.js';
import { sleep } from '../../test/kit/managed-process.js';
import { streamRequest } from '../../test/kit/sse-request.js';
import { REAL_VLLM_ENGINES } from '../presets/real-vllm.js';
import { inProcessWorkerEngines } from '../presets/real-vllm-low-load.js';
import { TINY_MODEL_NAME } from '../../test/kit/vllm-paths.js';
import { pairedDifference, type PairedDifference } from '../stats/paired.js';
import { median } from '../stats/percentiles.js';
import type { BenchRequest } from '../workloads/types.js';

export const CONDITIONS = ['plain', 'scrape-same', 'scrape-other', 'chunked'] as const;
export type Condition = (typeof CONDITIONS)[number];

/** Scrapes start within this many ms of the request (a prefill of the fresh question takes ~100 ms). */
export const SCRAPE_WINDOW_MS = 120;
const PREFIX_WORDS = 600;
const FRESH_WORDS = 60;
const WARM_UP = 6;

/** Pass `i`'s order: the conditions rotated by i, so none always follows the same one. */
export function passOrder(i: number): Condition[] {
  const k = i % CONDITIONS.length;
  return [...CONDITIONS.slice(k), ...CONDITIONS.slice(0, k)];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      passes: { type: 'string', default: '60' },
      'gap-ms': { type: 'string', default: '700' },
      'in-process-worker': { type: 'boolean', default: false },
      seed: { type: 'string', default: '1' },
      out: { type: 'string', default: '' },
    },
  });
  const passes = Number(values.passes);
  const gapMs = Number(values['gap-ms']);
  const seed = Number(values.seed);
  if (!Number.isInteger(passes) || passes < 1 || passes > 500) throw new Error('--passes: an integer in 1..500');
  if (!(gapMs >= 0 && gapMs <= 10_000)) throw new Error('--gap-ms: 0..10000');
  const setup = values['in-process-worker'] ? inProcessWorkerEngines(REAL_VLLM_ENGINES) : REAL_VLLM_ENGINES;
  const rng = seededRng(seed);
  const prefix = Array.from({ length: PREFIX_WORDS }, (_, i) => `word${i % 211}`).join(' ');
  let serial = 0;
  const nextRequest = (): BenchRequest => {
    serial++;
    const fresh = Array.from({ length: FRESH_WORDS }, (_, k) => `q${serial}w${k}`).join(' ');
    return {
      id: `c${serial}`,
      atMs: 0,
      api: 'completions',
      prompt: `${prefix} ${fresh}`,
      promptTokens: 1100,
      maxTokens: 4,
      group: 'g',
      reusableTokens: 0,
    };
  };
  const fleet = await startEngineFleet(setup.count, setup.flags, TINY_MODEL_NAME, setup);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const ttft = new Map<Condition, (number | null)[]>(CONDITIONS.map((c) => [c, []]));
  const scrapeMs: number[] = [];
  try {
    if (fleet.engines.length < 2) throw new Error('engine-side-costs needs 2 engines');
    const one = async (engineIndex: number, condition: Condition): Promise<number | null> => {
      const engine = fleet.engines[engineIndex]!;
      const other = fleet.engines[1 - engineIndex]!;
      const target = condition === 'scrape-same' ? engine : condition === 'scrape-other' ? other : undefined;
      const scrape =
        target === undefined
          ? Promise.resolve()
          : sleep(rng.next() * SCRAPE_WINDOW_MS).then(async () => {
              const t0 = performance.now();
              const page = await httpText(`${target.url}/metrics`, 'GET');
              if (page.status !== 200) throw new Error(`${target.address}/metrics answered ${page.status}`);
              scrapeMs.push(performance.now() - t0);
            });
      // A failed scrape is reported by `await scrape` below, after the request; until then
      // it must not count as an unhandled rejection.
      scrape.catch(() => undefined);
      const res = await streamRequest(nextRequest(), {
        baseUrl: engine.url,
        model: TINY_MODEL_NAME,
        timeoutMs: 20_000,
        agent,
        chunkedBody: condition === 'chunked',
      });
      await scrape;
      return res.outcome === 'ok' ? res.ttftMs : null;
    };
    for (let i = 0; i < WARM_UP; i++) await one(i % 2, 'plain');
    for (let i = 0; i < passes; i++) {
      for (const condition of passOrder(i)) {
        await sleep(gapMs);
        ttft.get(condition)!.push(await one(i % 2, condition));
      }
    }
  } finally {
    agent.destroy();
    await fleet.stop();
  }
  const plain = ttft.get('plain')!;
  const report = {
    engines: setup.label,
    inProcessWorker: values['in-process-worker'],
    passes,
    gapMs,
    seed,
    scrapeWindowMs: SCRAPE_WINDOW_MS,
    scrapeMsP50: median(scrapeMs),
    conditions: CONDITIONS.map((c) => {
      const xs = ttft.get(c)!;
      const ok = xs.filter((x): x is number => x !== null);
      const paired: PairedDifference | null = c === 'plain' ? null : pairedDifference(plain, xs, 2000, seed);
      return { condition: c, n: ok.length, failed: xs.length - ok.length, ttftP50Ms: median(ok), pairedWithPlain: paired };
    }),
  };
  const text = JSON.stringify(report, null, 2);
  if (values.out !== '') writeFileSync(values.out, text + '\n');
  console.log(text);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
}
