/**
 * Predicted-hit accuracy against the engines' own `cached_tokens`, side by side: the precise
 * index (KV events), the approximate index (routing history), and the approximate index with
 * calibration (index-calibration.ts), all watching the same request stream.
 *
 * One seeded stream of chat requests (a few long system prompts, short user turns) goes to
 * engines chosen at random, one request at a time, so each engine's small KV cache keeps
 * evicting. Before each request every predictor says how many leading tokens the chosen
 * engine holds; the answer's `usage.prompt_tokens_details.cached_tokens` judges it. A
 * prediction (a predicted hit of more than one engine block) is correct when the engine cached
 * at least that much, less one engine block (converted to characters for the approximate index); the precise predictor is also checked for exact equality.
 * Accuracy is reported over the first requests (the first seconds) and over the whole run.
 * Optionally the stream is interrupted (`--gap-at N`: engine 0's feed is cut by closing and
 * reopening its subscription) to show resync.
 *
 *   npm run bench -- kv-accuracy --engines sim [--requests 120] [--out DIR]
 *   npm run bench -- kv-accuracy --engines vllm --vllm http://127.0.0.2:8000=tcp://127.0.0.2:5622,... --model-dir DIR
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../../src/core/types.js';
import { defaultConfig } from '../../src/config/default-config.js';
import { KvEventSubscriber, type KvEventSource } from '../../src/kv-events/kv-event-subscriber.js';
import { BlockHasher } from '../../src/prefix-cache/block-hasher.js';
import { PreciseAffinity } from '../../src/precise-index/precise-affinity.js';
import { PrefixIndex } from '../../src/prefix-cache/prefix-index.js';
import { IndexCalibration } from '../../src/plugins/multi/index-calibration.js';
import { extractPrompt } from '../../src/request/extract-prompt.js';
import type { CycleState } from '../../src/framework/types.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { createTokenBlockHasher } from '../../src/tokenization/token-block-hasher.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import { simProfile } from '../sim-engine/engine-config.js';
import { SimEngineServer } from '../sim-engine/http-server.js';
import { writeTinyTokenizer } from '../../test/kit/tiny-tokenizer.js';
import { arg } from '../micro/cli-arg.js';
import { emitRun } from './run-output.js';
import { gitOutput } from '../micro/git-output.js';
import { wordText } from './word-text.js';
import { sleep } from '../../test/kit/managed-process.js';

const text = (rng: Rng, chars: number): string => wordText(rng, chars);

interface EngineHandle {
  readonly url: string;
  readonly kv: string;
  readonly id: string;
  stop(): Promise<void>;
}

interface Tally {
  predictions: number;
  correct: number;
  /** Engine hits of more than one block that the predictor did not predict. */
  missedHits: number;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const kind = arg(argv, '--engines') ?? 'sim';
  const requests = Number(arg(argv, '--requests') ?? 120);
  const early = Number(arg(argv, '--early') ?? 20);
  const seed = Number(arg(argv, '--seed') ?? 5);
  const out = arg(argv, '--out');
  const model = arg(argv, '--model') ?? 'tiny-llama';
  const blockSize = Number(arg(argv, '--block-size') ?? 128);
  const systemsN = Number(arg(argv, '--systems') ?? 6);
  const systemChars = Number(arg(argv, '--system-chars') ?? 4000);
  const modelDir =
    arg(argv, '--model-dir') ??
    (existsSync('/tmp/kvx/tiny/tokenizer.json') ? '/tmp/kvx/tiny' : writeTinyTokenizer(mkdtempSync(join(tmpdir(), 'kv-acc-'))));
  const rng = seededRng(seed);

  const engines: EngineHandle[] = [];
  if (kind === 'sim') {
    for (let i = 0; i < 2; i++) {
      const s = new SimEngineServer({
        ...simProfile('gpu-like'),
        port: 0,
        model,
        blockSize,
        kvCacheBlocks: 72,
        tokenizerDir: modelDir,
        kvEventsPort: 0,
        timeScale: 0.05,
        maxModelLen: 8192,
        seed: i,
      });
      await s.start();
      engines.push({ url: s.url, kv: s.kvPublisher!.endpoint, id: s.id, stop: () => s.stop(500) });
    }
  } else {
    for (const pair of (arg(argv, '--vllm') ?? '').split(',').filter((x) => x !== '')) {
      const [url, kv] = pair.split('=') as [string, string];
      engines.push({ url, kv, id: new URL(url).host, stop: async () => {} });
    }
    if (engines.length === 0) throw new Error('--engines vllm needs --vllm http://h:p=tcp://h:kp,...');
  }
  const endpoints: Endpoint[] = engines.map((e, index) => {
    const u = new URL(e.url);
    return { id: e.id, address: u.hostname, port: Number(u.port), pool: 'p', models: [model], index };
  });

  // Predictors.
  const tokenizer = await ModelTokenizer.fromDirectory(modelDir);
  const affinity = new PreciseAffinity(
    { mode: 'precise', speculativeTtlMs: 0, resyncWindowMs: 30_000, maxBlocks: 512, endpoints: engines.length },
    await createTokenBlockHasher(),
    new Map([[model, { tokenizer, blockSize }]]),
    () => systemClock.nowMicros(),
  );
  const sub = new KvEventSubscriber(affinity.events, { clock: systemClock });
  const sources: KvEventSource[] = engines.map((e, i) => ({ endpointIndex: i, endpointId: e.id, url: e.kv, topic: 'kv-events', model }));
  sub.setSources(sources);
  const cfg = defaultConfig({ endpoints: endpoints.map((e) => ({ address: e.id })) });
  const blockChars = cfg.cacheAware.blockChars;
  const approxHasher = new BlockHasher({ blockChars, maxBlocks: cfg.cacheAware.maxPrefixBlocks });
  const approx = new PrefixIndex({ endpoints: engines.length, capacityBlocks: cfg.cacheAware.indexCapacityBlocks });
  const calIndex = new PrefixIndex({ endpoints: engines.length, capacityBlocks: cfg.cacheAware.indexCapacityBlocks });
  const c = cfg.load.calibration;
  const calibration = new IndexCalibration('cal', approxHasher, calIndex, {
    calibrate: true,
    adaptCapacity: c.adaptCapacity ?? true,
    sizeFromEngine: false,
    toleranceBlocks: c.toleranceBlocks,
    accuracyWindow: c.accuracyWindow,
    blockChars,
    charsPerToken: cfg.requests.charsPerToken,
    configuredCapacity: cfg.cacheAware.indexCapacityBlocks,
    minCapacity: 64,
    keyChars: 256,
    minKeyChars: 64,
  });
  calibration.onEndpointsChanged(endpoints);
  await sleep(500); // subscriptions connect

  const systems = Array.from({ length: systemsN }, () => text(rng, systemChars));
  const tally = {
    precise: [
      { predictions: 0, correct: 0, missedHits: 0 },
      { predictions: 0, correct: 0, missedHits: 0 },
    ],
    approx: [
      { predictions: 0, correct: 0, missedHits: 0 },
      { predictions: 0, correct: 0, missedHits: 0 },
    ],
    calibrated: [
      { predictions: 0, correct: 0, missedHits: 0 },
      { predictions: 0, correct: 0, missedHits: 0 },
    ],
  } as Record<string, [Tally, Tally]>;
  let preciseExact = 0;
  let hits = 0;
  const gapAt = Number(arg(argv, '--gap-at') ?? -1);
  let _afterGapPredictedOnEmpty = 0;
  const t0 = Date.now();
  const judge = (t: [Tally, Tally], i: number, predictedOk: boolean | undefined, engineHit: boolean): void => {
    for (const k of i < early ? [0, 1] : [1]) {
      if (predictedOk === undefined) {
        if (engineHit) t[k]!.missedHits++;
        continue;
      }
      t[k]!.predictions++;
      if (predictedOk) t[k]!.correct++;
    }
  };
  for (let i = 0; i < requests; i++) {
    const e = Math.floor(rng.next() * engines.length);
    const messages = [
      { role: 'system', content: systems[Math.floor(rng.next() * systems.length)]! },
      { role: 'user', content: text(rng, 200) },
    ];
    const body = Buffer.from(JSON.stringify({ model, messages, max_tokens: 2, ignore_eos: true }));
    const p = extractPrompt('/v1/chat/completions', body, { maxPrefixChars: 131_072, charsPerToken: 4 });
    const req: RouteRequest = {
      requestId: `r${i}`,
      model,
      prefix: p.prefix,
      promptChars: p.promptChars,
      promptTokens: p.promptTokens,
      stream: false,
      arrivalMs: 0,
      ...(p.input ? { promptInput: p.input } : {}),
    };
    // Predictions before sending.
    const rk = affinity.requestKeys(model, req.promptInput)!;
    const precisePredBlocks = affinity.events.match(rk.keys)[e]!;
    const ah = approxHasher.hash(model, req.prefix);
    const approxPred = ah.count > 0 ? approx.match(ah)[e]! : 0;
    const calPred = ah.count > 0 ? calIndex.match(ah)[e]! : 0;
    const decision = {
      requestId: req.requestId,
      endpoint: endpoints[e]!,
      matchedBlocks: calPred,
      totalBlocks: ah.count,
    } as unknown as RouteDecision;
    const state: CycleState = { request: req, nowMs: systemClock.nowMs(), rng, scratch: new Map(), notes: [] };
    calibration.onRouted(state, decision);
    approx.insert(e, ah);
    calIndex.insert(e, ah);
    const r = await fetch(`${engines[e]!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const j = (await r.json()) as { usage?: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } };
    const cached = j.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    const promptTokens = j.usage?.prompt_tokens ?? 0;
    if (cached > 0) hits++;
    const outcome: RequestOutcome = { aborted: false, status: r.status, promptTokens, cachedTokens: cached, servedBy: endpoints[e]!.id };
    calibration.onCompleted(req, decision, outcome);
    // Judge: a predicted hit (> 1 block) must be confirmed within one block.
    const preciseTok = precisePredBlocks * blockSize;
    if (preciseTok === cached) preciseExact++;
    judge(tally['precise']!, i, precisePredBlocks > 1 ? cached >= preciseTok - blockSize : undefined, cached > blockSize);
    const cpt = promptTokens > 0 ? req.promptChars / promptTokens : 4;
    const confirmedChars = Math.floor((cached * cpt) / blockChars);
    // The same slack for everyone: one engine block, here in the approximate index's char blocks.
    const tol = Math.ceil((blockSize * cpt) / blockChars);
    judge(tally['approx']!, i, approxPred > tol ? confirmedChars >= approxPred - tol : undefined, cached > blockSize);
    judge(tally['calibrated']!, i, calPred > tol ? confirmedChars >= calPred - tol : undefined, cached > blockSize);
    if (gapAt >= 0 && i > gapAt && cached === 0 && precisePredBlocks > 0) _afterGapPredictedOnEmpty++;
    await sleep(kind === 'sim' ? 20 : 50); // let the engine's events arrive
  }
  const elapsed = (Date.now() - t0) / 1000;
  const rate = (t: Tally): number | null => (t.predictions === 0 ? null : t.correct / t.predictions);
  const result = {
    bench: 'kv-accuracy',
    engines: kind,
    commit: gitOutput(['rev-parse', 'HEAD']),
    dirty: gitOutput(['status', '--porcelain']).length > 0,
    config: { requests, early, seed, model, blockSize, systems: systemsN, systemChars, kvCacheBlocks: 72, engines: engines.length },
    elapsedSeconds: elapsed,
    engineHits: hits,
    preciseExactRate: preciseExact / requests,
    accuracy: Object.fromEntries(
      Object.entries(tally).map(([k, [a, b]]) => [k, { first: { ...a, rate: rate(a) }, all: { ...b, rate: rate(b) } }]),
    ),
    kvStreams: sub.stats(),
    calibration: calibration.stats(),
  };
  const md = [
    `# Predicted-hit accuracy vs engine cached_tokens (${kind}, 2 engines × 72 blocks of ${blockSize})`,
    '',
    `commit ${result.commit}${result.dirty ? ' (dirty)' : ''}; ${requests} requests in ${elapsed.toFixed(0)} s, ${hits} engine hits; precise predicted cached tokens exactly for ${(100 * result.preciseExactRate).toFixed(1)}% of requests`,
    '',
    `| predictor | accuracy, first ${early} requests | accuracy, all | engine hits not predicted (all) |`,
    '|---|---|---|---|',
    ...Object.entries(tally).map(
      ([k, [a, b]]) =>
        `| ${k} | ${pct(rate(a))} (${a.correct}/${a.predictions}) | ${pct(rate(b))} (${b.correct}/${b.predictions}) | ${b.missedHits} |`,
    ),
    '',
  ].join('\n');
  emitRun(out, result, md);
  sub.stop();
  await Promise.all(engines.map((e) => e.stop()));
}

function pct(v: number | null): string {
  return v === null ? '-' : `${(100 * v).toFixed(1)}%`;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
