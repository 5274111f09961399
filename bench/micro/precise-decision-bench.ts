/**
 * Decision cost of precise prefix matching: the `precise-prefix-cache` plugin's score +
 * routed hook for 32 KB chat bodies (router-side chat template, tokenization, block keys,
 * approximate and event-fed matches), side by side with the approximate `prefix-cache`
 * plugin on the same requests, interleaved in one run.
 *
 * Two request kinds: `cached` (a system prompt from a pool of 8, already seen, plus a fresh
 * user turn of `--user-chars`, default 500; the body is ~32 KB) and `uncached` (a system prompt never seen before: everything is
 * tokenized). 16 engines; the event-fed index is filled with BlockStored events for the
 * pool's prompts (engines synced), so matching does real work. Body parsing (extractPrompt)
 * is timed apart: it is the same for both modes.
 *
 *   node dist/bench/micro/precise-decision-bench.js --model-dir DIR [--out bench/results/precise-decision] [--n 2000]
 */
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
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
import { writeTinyTokenizer } from '../harness/tiny-tokenizer.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { arg } from './cli-arg.js';
import { emitRun } from '../kv-events/run-output.js';
import { gitOutput } from './git-output.js';

const WORDS = 'the of and to in is that for it as with was on be by this are or at from which an have not but they all one can system user assistant tool call result request response model cache prefix token block engine router prompt context session question answer data value error status function argument list file path name type number string return query search read write memory queue latency first last next step turn message content reply summary report please explain describe show find check compare update create'.split(' ');

function text(rng: Rng, chars: number): string {
  let s = '';
  while (s.length < chars) s += WORDS[Math.floor(rng.next() * WORDS.length)]! + (rng.next() < 0.08 ? '.\n' : ' ');
  return s.slice(0, chars);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const modelDir = arg(argv, '--model-dir') ?? writeTinyTokenizer(mkdtempSync(join(tmpdir(), 'precise-bench-')));
  const out = arg(argv, '--out');
  const n = Number(arg(argv, '--n') ?? 2000);
  const blockSize = Number(arg(argv, '--block-size') ?? 128);
  const userChars = Number(arg(argv, '--user-chars') ?? 500);
  const seed = 7;
  const rng = seededRng(seed);
  const E = 16;
  const endpoints: Endpoint[] = Array.from({ length: E }, (_, i) => ({ id: `127.0.0.${2 + i}:8000`, address: `127.0.0.${2 + i}`, port: 8000, pool: 'p', models: ['m'], index: i }));
  const approxHasher = new BlockHasher({ blockChars: 64, maxBlocks: 512 });
  const precise = new PrecisePrefixCachePlugin(
    'precise',
    { mode: 'precise', models: [{ name: 'm', tokenizerDir: modelDir, blockSize }], kvTopic: 'kv-events', kvUrls: {}, speculativeTtlMs: 10_000, resyncWindowMs: 30_000, maxBlocks: 512 },
    approxHasher,
    new PrefixIndex({ endpoints: E, capacityBlocks: 100_000 }),
    systemClock,
  );
  const approx = new PrefixCachePlugin('approx', new BlockHasher({ blockChars: 64, maxBlocks: 512 }), new PrefixIndex({ endpoints: E, capacityBlocks: 100_000 }));
  precise.onEndpointsChanged(endpoints);
  approx.onEndpointsChanged(endpoints);
  precise.start();
  await precise.ready;
  if (precise.loadFailure) throw precise.loadFailure;
  const aff = precise.preciseAffinity!;
  const systems = Array.from({ length: 8 }, () => text(rng, 32_000 - userChars));
  const body = (system: string): Uint8Array =>
    Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'system', content: system }, { role: 'user', content: text(rng, userChars) }], max_tokens: 16 }));
  const load: LoadSnapshot = { inflightRequests: 0, inflightPromptTokens: 0 } as LoadSnapshot;
  const candidates: Candidate[] = endpoints.map((endpoint) => ({ endpoint, load }));
  const toRequest = (b: Uint8Array, i: number): { req: RouteRequest; parseMicros: number } => {
    const t0 = performance.now();
    const p = extractPrompt('/v1/chat/completions', b, { maxPrefixChars: 32_768, charsPerToken: 4 });
    const parseMicros = (performance.now() - t0) * 1000;
    const req: RouteRequest = { requestId: `r${i}`, model: p.model, prefix: p.prefix, promptChars: p.promptChars, promptTokens: p.promptTokens, stream: false, arrivalMs: 0, ...(p.input ? { promptInput: p.input } : {}) };
    return { req, parseMicros };
  };
  const state = (req: RouteRequest): CycleState => ({ request: req, nowMs: performance.now(), rng, scratch: new Map(), notes: [] });
  const decide = (plugin: PrecisePrefixCachePlugin | PrefixCachePlugin, req: RouteRequest): number => {
    const t0 = performance.now();
    const st = state(req);
    const scores = plugin.score(st, candidates);
    let best = 0;
    for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[best]!) best = i;
    plugin.onRouted(st, { requestId: req.requestId, endpoint: endpoints[best]!, matchedBlocks: 0, totalBlocks: 0 } as unknown as RouteDecision);
    return (performance.now() - t0) * 1000;
  };
  // Engines hold the pool's system prompts: synced, with their blocks stored (2 engines each).
  for (let e = 0; e < E; e++) aff.events.markFresh(e);
  let fake = 1n;
  for (let s = 0; s < systems.length; s++) {
    const { req } = toRequest(body(systems[s]!), -1);
    const input = req.promptInput as unknown as { messages: { role: string; content: string }[] };
    aff.requestKeys('m', req.promptInput); // warms the piece cache too
    const tokenIds = aff.tokenizer('m')!.tokenizer.chatTokenIds(input.messages);
    const nb = Math.floor(tokenIds.length / blockSize);
    for (const e of [(2 * s) % E, (2 * s + 1) % E]) {
      aff.events.apply(e, 'm', [{ type: 'BlockStored', blockHashes: Array.from({ length: nb }, () => fake++), parentBlockHash: null, tokenIds: tokenIds.slice(0, nb * blockSize), blockSize, loraName: null, medium: 'GPU', hasExtraKeys: false, groupIdx: 0 }], 0);
    }
  }
  const rec = { preciseCached: [] as number[], approxCached: [] as number[], preciseUncached: [] as number[], approxUncached: [] as number[], parse: [] as number[] };
  const warm = 300;
  let tokens = 0;
  for (let i = 0; i < n + warm; i++) {
    const uncached = i % 10 === 9;
    const { req, parseMicros } = toRequest(body(uncached ? text(rng, 32_000 - userChars) : systems[Math.floor(rng.next() * systems.length)]!), i);
    const a = decide(approx, req);
    const p = decide(precise, req);
    if (i < warm) continue;
    rec.parse.push(parseMicros);
    if (uncached) {
      rec.preciseUncached.push(p);
      rec.approxUncached.push(a);
    } else {
      rec.preciseCached.push(p);
      rec.approxCached.push(a);
    }
    if (i === warm) tokens = aff.requestKeys('m', req.promptInput)!.tokens;
  }
  // Tokenizing text never seen (a new 31.5 KB system prompt, rendered): the library on the
  // whole text vs the pre-token id cache (warm with this vocabulary), interleaved.
  const whole = await ModelTokenizer.fromDirectory(modelDir, { preTokenCache: false });
  const pre = await ModelTokenizer.fromDirectory(modelDir);
  pre.encode(text(rng, 32_000), false);
  const tok = { libraryWhole: [] as number[], preTokenCache: [] as number[] };
  for (let i = 0; i < 60; i++) {
    const t = whole.renderChat([{ role: 'system', content: text(rng, 32_000 - userChars) }, { role: 'user', content: text(rng, userChars) }]);
    let t0 = performance.now();
    const a = whole.encode(t, false);
    tok.libraryWhole.push((performance.now() - t0) * 1000);
    t0 = performance.now();
    const b = pre.encode(t, false);
    tok.preTokenCache.push((performance.now() - t0) * 1000);
    if (a.length !== b.length || a.some((x, j) => x !== b[j])) throw new Error('pre-token cache ids differ from the library encoding');
  }
  const d = Object.fromEntries([...Object.entries(rec), ...Object.entries(tok).map(([k, v]) => [`tokenizeNew32KB_${k}`, v] as const)].map(([k, v]) => [k, distribution(v)]));
  const bodyBytes = body(systems[0]!).byteLength;
  const result = {
    bench: 'precise-decision',
    commit: gitOutput(['rev-parse', 'HEAD']),
    dirty: gitOutput(['status', '--porcelain']).length > 0,
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    config: { endpoints: E, blockSize, decisions: n, warm, seed, bodyBytes, userChars, promptTokens: tokens, modelDir: modelDir.includes('tmp') ? 'tiny (bench/harness/tiny-tokenizer.ts)' : modelDir, uncachedShare: 0.1 },
    microseconds: d,
    tokenizerCache: aff.tokenizer('m')!.tokenizer.cacheStats(),
  };
  const md = [
    `# Precise decision cost (32 KB chat body, ${E} engines, block ${blockSize})`,
    '',
    `commit ${result.commit}${result.dirty ? ' (dirty)' : ''}, ${result.node}, ${result.cpu}; body ${bodyBytes} B ≈ ${tokens} tokens; ${n} decisions after ${warm} warm-up`,
    '',
    '| µs | p50 | p90 | p99 | max |',
    '|---|---|---|---|---|',
    ...Object.entries(d).map(([k, v]) => `| ${k} | ${f(v.p50)} | ${f(v.p90)} | ${f(v.p99)} | ${f(v.max)} |`),
    '',
    `p99 ratio precise/approx, cached system prompt: ${(d['preciseCached']!.p99! / d['approxCached']!.p99!).toFixed(2)}x; uncached: ${(d['preciseUncached']!.p99! / d['approxUncached']!.p99!).toFixed(2)}x`,
    '',
    `tokenizing a new rendered 32 KB chat, library whole / pre-token cache: p50 ${(d['tokenizeNew32KB_libraryWhole']!.p50! / d['tokenizeNew32KB_preTokenCache']!.p50!).toFixed(1)}x (ids checked equal)`,
    '',
    'Rows: precise/approx = one decision (score + routed hook) of the precise-prefix-cache / prefix-cache plugin, cached = system prompt seen before, uncached = never seen; parse = body parsing (same for both); tokenizeNew32KB_* = tokenizer alone on text never seen.',
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
