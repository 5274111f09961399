/**
 * Decision cost of precise prefix matching: the `precise-prefix-cache` plugin's score +
 * routed hook for 32 KB bodies (router-side chat template, tokenization, block keys,
 * approximate and event-fed matches), side by side with the approximate `prefix-cache`
 * plugin on the same requests, interleaved in one run.
 *
 * Request kinds, interleaved (of every 20): 14 `chatCached` (a system prompt from a pool of 8,
 * already seen, plus a fresh user turn of `--user-chars`, default 500; the body is ~32 KB),
 * 2 `chatUncached` (a system prompt never seen before: everything is tokenized), 3
 * `completionCached` (a completions prompt: a document from a pool of 8 plus a fresh
 * question) and 1 `completionUncached` (a new document). 16 engines; the event-fed index is
 * filled with BlockStored events for the pools' prompts (engines synced), so matching does
 * real work. Body parsing (extractPrompt) is timed apart: it is the same for both plugins.
 * The first `--warm` decisions (default 500) are not recorded (JIT, caches filling). Each
 * decision's wall time and the process CPU time over it are recorded.
 *
 * GC: young-generation bytes allocated per decision (median over batches of 10 decisions of
 * one kind with no collection between them) and the collections seen while the recorded
 * decisions ran (their harness allocates too: body building and parsing). The load average
 * is recorded at the start and the end: p99 on a loaded 2-core box measures the box.
 *
 *   node dist/bench/micro/precise-decision-bench.js --model-dir DIR [--out bench/results/precise-decision] [--n 6000]
 */
import { mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { join } from 'node:path';
import type { Endpoint, RouteDecision, RouteRequest } from '../../src/core/types.js';
import { BlockHasher } from '../../src/prefix-cache/block-hasher.js';
import { PrefixIndex } from '../../src/prefix-cache/prefix-index.js';
import { PrecisePrefixCachePlugin } from '../../src/plugins/multi/precise-prefix-cache-plugin.js';
import { PrefixCachePlugin } from '../../src/plugins/multi/prefix-cache-plugin.js';
import { extractPrompt } from '../../src/request/extract-prompt.js';
import type { Candidate, CycleState } from '../../src/scheduling/types.js';
import type { LoadSnapshot } from '../../src/endpoints/load.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import { distribution } from '../stats/percentiles.js';
import { writeTinyTokenizer } from '../../test/kit/tiny-tokenizer.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { arg } from './cli-arg.js';
import { emitRun } from '../kv-events/run-output.js';
import { gitOutput } from './git-output.js';

const WORDS =
  'the of and to in is that for it as with was on be by this are or at from which an have not but they all one can system user assistant tool call result request response model cache prefix token block engine router prompt context session question answer data value error status function argument list file path name type number string return query search read write memory queue latency first last next step turn message content reply summary report please explain describe show find check compare update create'.split(
    ' ',
  );

function text(rng: Rng, chars: number): string {
  let s = '';
  while (s.length < chars) s += WORDS[Math.floor(rng.next() * WORDS.length)]! + (rng.next() < 0.08 ? '.\n' : ' ');
  return s.slice(0, chars);
}

type Kind = 'chatCached' | 'chatUncached' | 'completionCached' | 'completionUncached';
const KINDS: readonly Kind[] = ['chatCached', 'chatUncached', 'completionCached', 'completionUncached'];

/** The kind of the i-th request (14 / 2 / 3 / 1 of every 20). */
function kindOf(i: number): Kind {
  const r = i % 20;
  return r < 14 ? 'chatCached' : r < 16 ? 'chatUncached' : r < 19 ? 'completionCached' : 'completionUncached';
}

/** Young-generation bytes in use (new space and its large objects). */
function youngBytes(): number {
  let n = 0;
  for (const sp of getHeapSpaceStatistics())
    if (sp.space_name === 'new_space' || sp.space_name === 'new_large_object_space') n += sp.space_used_size;
  return n;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const modelDir = arg(argv, '--model-dir') ?? writeTinyTokenizer(mkdtempSync(join(tmpdir(), 'precise-bench-')));
  const out = arg(argv, '--out');
  const n = Number(arg(argv, '--n') ?? 6000);
  const warm = Number(arg(argv, '--warm') ?? 500);
  const blockSize = Number(arg(argv, '--block-size') ?? 128);
  const userChars = Number(arg(argv, '--user-chars') ?? 500);
  const loadStart = loadavg();
  const seed = 7;
  const rng = seededRng(seed);
  const E = 16;
  const endpoints: Endpoint[] = Array.from({ length: E }, (_, i) => ({
    id: `127.0.0.${2 + i}:8000`,
    address: `127.0.0.${2 + i}`,
    port: 8000,
    pool: 'p',
    models: ['m'],
    index: i,
  }));
  const approxHasher = new BlockHasher({ blockChars: 64, maxBlocks: 512 });
  const precise = new PrecisePrefixCachePlugin(
    'precise',
    {
      mode: 'precise',
      models: [{ name: 'm', tokenizerDir: modelDir, blockSize }],
      kvTopic: 'kv-events',
      kvUrls: {},
      speculativeTtlMs: 10_000,
      resyncWindowMs: 30_000,
      maxBlocks: 512,
    },
    approxHasher,
    new PrefixIndex({ endpoints: E, capacityBlocks: 100_000 }),
    systemClock,
  );
  const approx = new PrefixCachePlugin(
    'approx',
    new BlockHasher({ blockChars: 64, maxBlocks: 512 }),
    new PrefixIndex({ endpoints: E, capacityBlocks: 100_000 }),
  );
  precise.onEndpointsChanged(endpoints);
  approx.onEndpointsChanged(endpoints);
  precise.start();
  await precise.ready;
  if (precise.loadFailure) throw precise.loadFailure;
  const aff = precise.preciseAffinity!;
  const tokenizer = aff.tokenizer('m')!.tokenizer;
  const systems = Array.from({ length: 8 }, () => text(rng, 32_000 - userChars));
  const docs = Array.from({ length: 8 }, () => text(rng, 32_000 - userChars));
  const chatBody = (system: string): Uint8Array =>
    Buffer.from(
      JSON.stringify({
        model: 'm',
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: text(rng, userChars) },
        ],
        max_tokens: 16,
      }),
    );
  const completionBody = (doc: string): Uint8Array =>
    Buffer.from(JSON.stringify({ model: 'm', prompt: `${doc}\n\nQuestion: ${text(rng, userChars)}\nAnswer:`, max_tokens: 16 }));
  const bodyOf = (kind: Kind): { path: string; body: Uint8Array } => {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)]!;
    switch (kind) {
      case 'chatCached':
        return { path: '/v1/chat/completions', body: chatBody(pick(systems)) };
      case 'chatUncached':
        return { path: '/v1/chat/completions', body: chatBody(text(rng, 32_000 - userChars)) };
      case 'completionCached':
        return { path: '/v1/completions', body: completionBody(pick(docs)) };
      case 'completionUncached':
        return { path: '/v1/completions', body: completionBody(text(rng, 32_000 - userChars)) };
    }
  };
  const load: LoadSnapshot = { inflightRequests: 0, inflightPromptTokens: 0 } as LoadSnapshot;
  const candidates: Candidate[] = endpoints.map((endpoint) => ({ endpoint, load }));
  const toRequest = (path: string, b: Uint8Array, i: number): { req: RouteRequest; parseMicros: number } => {
    const t0 = performance.now();
    const p = extractPrompt(path, b, { maxPrefixChars: 32_768, charsPerToken: 4 });
    const parseMicros = (performance.now() - t0) * 1000;
    const req: RouteRequest = {
      requestId: `r${i}`,
      model: p.model,
      prefix: p.prefix,
      promptChars: p.promptChars,
      promptTokens: p.promptTokens,
      stream: false,
      arrivalMs: 0,
      ...(p.input ? { promptInput: p.input } : {}),
    };
    return { req, parseMicros };
  };
  const state = (req: RouteRequest): CycleState => ({ request: req, nowMs: performance.now(), rng, scratch: new Map(), notes: [] });
  // Wall time, and the process's CPU time over the same span (getrusage: what the decision
  // itself did, without the time the thread waited for a core on a loaded machine).
  let lastCpu = 0;
  let lastStart = 0;
  const decide = (plugin: PrecisePrefixCachePlugin | PrefixCachePlugin, req: RouteRequest): number => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    lastStart = t0;
    const st = state(req);
    const scores = plugin.score(st, candidates);
    let best = 0;
    for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[best]!) best = i;
    plugin.onRouted(st, {
      requestId: req.requestId,
      endpoint: endpoints[best]!,
      matchedBlocks: 0,
      totalBlocks: 0,
    } as unknown as RouteDecision);
    const wall = (performance.now() - t0) * 1000;
    const c = process.cpuUsage(c0);
    lastCpu = c.user + c.system;
    return wall;
  };
  // Engines hold the pools' prompts: synced, with their blocks stored (2 engines each).
  for (let e = 0; e < E; e++) aff.events.markFresh(e);
  let fake = 1n;
  const store = (tokenIds: readonly number[], s: number): void => {
    const nb = Math.floor(tokenIds.length / blockSize);
    for (const e of [(2 * s) % E, (2 * s + 1) % E]) {
      aff.events.apply(
        e,
        'm',
        [
          {
            type: 'BlockStored',
            blockHashes: Array.from({ length: nb }, () => fake++),
            parentBlockHash: null,
            tokenIds: tokenIds.slice(0, nb * blockSize),
            blockSize,
            loraName: null,
            medium: 'GPU',
            hasExtraKeys: false,
            groupIdx: 0,
          },
        ],
        0,
      );
    }
  };
  for (let s = 0; s < systems.length; s++) {
    const { req } = toRequest('/v1/chat/completions', chatBody(systems[s]!), -1);
    const input = req.promptInput as unknown as { messages: { role: string; content: string }[] };
    aff.requestKeys('m', req.promptInput); // warms the piece cache too
    store(tokenizer.chatTokenIds(input.messages), s);
  }
  for (let s = 0; s < docs.length; s++) {
    const { req } = toRequest('/v1/completions', completionBody(docs[s]!), -1);
    aff.requestKeys('m', req.promptInput);
    store(tokenizer.encode((req.promptInput as unknown as { prompt: string }).prompt, true), s + systems.length);
  }
  const rec = Object.fromEntries(
    KINDS.flatMap((k) => [
      [`precise_${k}`, [] as number[]],
      [`approx_${k}`, [] as number[]],
    ]),
  ) as Record<string, number[]>;
  const cpu = Object.fromEntries(Object.keys(rec).map((k) => [k, [] as number[]])) as Record<string, number[]>;
  /** Per recorded decision, its [start, end] in ms (performance.now), to find the ones a collection ran inside. */
  const spans = Object.fromEntries(Object.keys(rec).map((k) => [k, [] as number[]])) as Record<string, number[]>;
  const parse: number[] = [];
  const tokensOf: Partial<Record<Kind, number>> = {};
  // GC entries arrive after the (synchronous) loop: kept by their start time.
  const gcs: { start: number; ms: number }[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, ms: e.duration });
  });
  obs.observe({ entryTypes: ['gc'] });
  let recordFrom = Infinity;
  for (let i = 0; i < n + warm; i++) {
    if (i === warm) recordFrom = performance.now();
    const kind = kindOf(i);
    const { path, body } = bodyOf(kind);
    const { req, parseMicros } = toRequest(path, body, i);
    const a = decide(approx, req);
    const aCpu = lastCpu;
    const aStart = lastStart;
    const p = decide(precise, req);
    const pCpu = lastCpu;
    const pStart = lastStart;
    if (i < warm) continue;
    spans[`precise_${kind}`]!.push(pStart, pStart + p / 1000);
    spans[`approx_${kind}`]!.push(aStart, aStart + a / 1000);
    parse.push(parseMicros);
    rec[`precise_${kind}`]!.push(p);
    rec[`approx_${kind}`]!.push(a);
    cpu[`precise_${kind}`]!.push(pCpu);
    cpu[`approx_${kind}`]!.push(aCpu);
    tokensOf[kind] ??= aff.requestKeys('m', req.promptInput)!.tokens;
  }
  const recordTo = performance.now();
  await new Promise((r) => setTimeout(r, 100));
  obs.disconnect();
  const inWindow = gcs.filter((g) => g.start >= recordFrom && g.start <= recordTo);
  const gcCount = inWindow.length;
  const gcMs = inWindow.reduce((a, g) => a + g.ms, 0);
  // Decisions with a collection (start or pause) inside them, and the wall-time distribution of the others.
  const byGc = Object.fromEntries(
    Object.entries(spans).map(([k, sp]) => {
      const clean: number[] = [];
      let hit = 0;
      for (let j = 0; j < sp.length; j += 2) {
        const [s0, s1] = [sp[j]!, sp[j + 1]!];
        if (inWindow.some((g) => g.start < s1 && g.start + g.ms > s0)) hit++;
        else clean.push(rec[k]![j / 2]!);
      }
      return [k, { withCollection: hit, withoutCollection: distribution(clean) }];
    }),
  );
  // Allocation per decision: batches of 10 requests of one kind, decided by the precise
  // plugin alone, with the young generation measured around the batch (kept when no
  // collection emptied it in between).
  const alloc: Record<string, number | null> = {};
  for (const kind of KINDS) {
    const per: number[] = [];
    for (let b = 0; b < 40; b++) {
      const reqs = Array.from({ length: 10 }, (_, i) => toRequest(bodyOf(kind).path, bodyOf(kind).body, i).req);
      const before = youngBytes();
      for (const r of reqs) decide(precise, r);
      const after = youngBytes();
      if (after >= before) per.push((after - before) / 10);
    }
    per.sort((x, y) => x - y);
    alloc[kind] = per.length === 0 ? null : per[per.length >> 1]!;
  }
  // Tokenizing text never seen (a new 31.5 KB system prompt, rendered): the library on the
  // whole text vs the pre-token id cache (warm with this vocabulary), interleaved.
  const whole = await ModelTokenizer.fromDirectory(modelDir, { preTokenCache: false });
  const pre = await ModelTokenizer.fromDirectory(modelDir);
  pre.encode(text(rng, 32_000), false);
  const tok = { libraryWhole: [] as number[], preTokenCache: [] as number[] };
  for (let i = 0; i < 60; i++) {
    const t = whole.renderChat([
      { role: 'system', content: text(rng, 32_000 - userChars) },
      { role: 'user', content: text(rng, userChars) },
    ]);
    let t0 = performance.now();
    const a = whole.encode(t, false);
    tok.libraryWhole.push((performance.now() - t0) * 1000);
    t0 = performance.now();
    const b = pre.encode(t, false);
    tok.preTokenCache.push((performance.now() - t0) * 1000);
    if (a.length !== b.length || a.some((x, j) => x !== b[j])) throw new Error('pre-token cache ids differ from the library encoding');
  }
  const d = Object.fromEntries(
    [...Object.entries(rec), ['parse', parse] as const, ...Object.entries(tok).map(([k, v]) => [`tokenizeNew32KB_${k}`, v] as const)].map(
      ([k, v]) => [k, distribution(v)],
    ),
  );
  const loadEnd = loadavg();
  const bodyBytes = chatBody(systems[0]!).byteLength;
  const recorded = n;
  const result = {
    bench: 'precise-decision',
    commit: gitOutput(['rev-parse', 'HEAD']),
    dirty: gitOutput(['status', '--porcelain']).length > 0,
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    loadAverage: { start: loadStart, end: loadEnd },
    config: {
      endpoints: E,
      blockSize,
      decisions: n,
      warm,
      seed,
      bodyBytes,
      userChars,
      promptTokens: tokensOf,
      modelDir: modelDir.includes('tmp') ? 'tiny (test/kit/tiny-tokenizer.ts)' : modelDir,
      mix: '14 chatCached / 2 chatUncached / 3 completionCached / 1 completionUncached of every 20',
    },
    microseconds: d,
    cpuMicroseconds: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, distribution(v)])),
    youngBytesPerDecision: alloc,
    gcWhileRecording: { collections: gcCount, pauseMs: gcMs, recordedDecisions: recorded },
    decisionsAndCollections: byGc,
    tokenizerCache: tokenizer.cacheStats(),
    renderCache: tokenizer.renderStats(),
    tokenization: aff.cost(),
  };
  const ratio = (a: string, b: string, q: 'p50' | 'p99'): string => (d[a]![q]! / d[b]![q]!).toFixed(2);
  const la = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
  const md = [
    `# Precise decision cost (32 KB bodies, ${E} engines, block ${blockSize})`,
    '',
    `commit ${result.commit}${result.dirty ? ' (dirty)' : ''}, ${result.node}, ${result.cpu}; load average ${la(loadStart)} at start, ${la(loadEnd)} at the end; chat body ${bodyBytes} B ≈ ${tokensOf.chatCached ?? '?'} tokens; ${n} decisions recorded after ${warm} warm-up (${result.config.mix})`,
    '',
    '| µs | p50 | p90 | p99 | max | count |',
    '|---|---|---|---|---|---|',
    ...Object.entries(d).map(([k, v]) => `| ${k} | ${f(v.p50)} | ${f(v.p90)} | ${f(v.p99)} | ${f(v.max)} | ${v.count} |`),
    '',
    'Process CPU time over each decision (getrusage, 1 µs resolution; not the wait for a core on a loaded machine, but other threads of the process, such as GC helpers, count):',
    '',
    '| CPU µs | p50 | p90 | p99 | max |',
    '|---|---|---|---|---|',
    ...Object.entries(result.cpuMicroseconds).map(([k, v]) => `| ${k} | ${f(v.p50)} | ${f(v.p90)} | ${f(v.p99)} | ${f(v.max)} |`),
    '',
    "Decisions a collection ran inside (any plugin's or the harness's garbage), and the wall time of the others:",
    '',
    '| µs | with a collection | p50 without | p99 without |',
    '|---|---|---|---|',
    ...Object.entries(byGc).map(
      ([k, v]) => `| ${k} | ${v.withCollection} | ${f(v.withoutCollection.p50)} | ${f(v.withoutCollection.p99)} |`,
    ),
    '',
    'precise / approximate, same requests (wall time):',
    '',
    '| kind | p50 | p99 |',
    '|---|---|---|',
    ...KINDS.map((k) => `| ${k} | ${ratio(`precise_${k}`, `approx_${k}`, 'p50')}x | ${ratio(`precise_${k}`, `approx_${k}`, 'p99')}x |`),
    '',
    `young-generation bytes allocated per precise decision (median of GC-free batches): ${KINDS.map((k) => `${k} ${alloc[k] === null ? '-' : Math.round(alloc[k]! / 1024) + ' KiB'}`).join(', ')}`,
    '',
    `collections while recording (harness included): ${gcCount}, ${gcMs.toFixed(1)} ms in total over ${recorded} recorded requests (2 decisions and 1 parse each)`,
    '',
    `tokenizing a new rendered 32 KB chat, library whole / pre-token cache: p50 ${(d['tokenizeNew32KB_libraryWhole']!.p50! / d['tokenizeNew32KB_preTokenCache']!.p50!).toFixed(1)}x (ids checked equal)`,
    '',
    'Rows: precise_* / approx_* = one decision (score + routed hook) of the precise-prefix-cache (mode precise) / prefix-cache plugin; *Cached = the system prompt or document was seen before, *Uncached = never seen; parse = body parsing (the same for both); tokenizeNew32KB_* = tokenizer alone on text never seen.',
    '',
  ].join('\n');
  emitRun(out, result, md);
}

function f(v: number | null): string {
  return v === null ? '-' : v.toFixed(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
