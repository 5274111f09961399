/**
 * Hit rate and TTFT with the cache-aware strategy, approximate index vs precise index (hybrid
 * mode, engine KV events), side by side on the same engines: each mode routes its own seeded
 * stream of the same shape (a pool of long system prompts, short user turns, Poisson
 * arrivals, streamed answers) through the router's scheduler (the ext_proc edge is not in the
 * loop; the scheduler decides, the request goes straight to the chosen engine; simulated
 * engines run in their own processes). Modes run one
 * after the other with disjoint prompt texts, so one mode's cache never serves the other.
 *
 *   node dist/bench/kv-events/routing-ab.js --engines sim|vllm [--vllm http://h:p=tcp://h:kp,...] --model-dir DIR [--requests 48] [--qps 1] [--out DIR]
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/default-config.js';
import { createScheduler } from '../../src/compose/create-scheduler.js';
import { extractPrompt } from '../../src/request/extract-prompt.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import { distribution } from '../stats/percentiles.js';
import { startSimEngines } from '../../test/kit/sim-engines.js';
import { writeTinyTokenizer } from '../../test/kit/tiny-tokenizer.js';
import { arg } from '../micro/cli-arg.js';
import { gitOutput } from '../micro/git-output.js';
import { emitRun } from './run-output.js';
import { wordText } from './word-text.js';
import { sleep } from '../../test/kit/managed-process.js';

const text = (rng: Rng, chars: number): string => wordText(rng, chars);

interface Rec {
  ttftMs: number;
  prompt: number;
  cached: number;
  engine: string;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const kind = arg(argv, '--engines') ?? 'sim';
  const requests = Number(arg(argv, '--requests') ?? 48);
  const qps = Number(arg(argv, '--qps') ?? 1);
  const model = arg(argv, '--model') ?? 'tiny-llama';
  const blockSize = Number(arg(argv, '--block-size') ?? 128);
  const systemsN = Number(arg(argv, '--systems') ?? 8);
  const systemChars = Number(arg(argv, '--system-chars') ?? 4000);
  const userChars = Number(arg(argv, '--user-chars') ?? 100);
  const simEngines = Number(arg(argv, '--sim-engines') ?? 2);
  const kvBlocks = Number(arg(argv, '--kv-blocks') ?? 72);
  const timeScale = Number(arg(argv, '--time-scale') ?? 1);
  const modelDir =
    arg(argv, '--model-dir') ??
    (existsSync('/tmp/kvx/tiny/tokenizer.json') ? '/tmp/kvx/tiny' : writeTinyTokenizer(mkdtempSync(join(tmpdir(), 'kv-ab-'))));
  const engines: { url: string; kv: string; id: string; stop: () => Promise<void> }[] = [];
  if (kind === 'sim') {
    // Engines in their own processes, so the router's tokenization does not delay them.
    const basePort = Number(arg(argv, '--base-port') ?? 23170);
    const fleet = await startSimEngines({
      count: simEngines,
      basePort,
      flags: {
        profile: 'gpu-like',
        model,
        'block-size': blockSize,
        'kv-cache-blocks': kvBlocks,
        tokenizer: modelDir,
        'kv-events-port-offset': 1000,
        'max-model-len': 8192,
        'time-scale': timeScale,
        ...(arg(argv, '--sim-prefill-ms') !== undefined ? { 'prefill-ms-per-token': Number(arg(argv, '--sim-prefill-ms')) } : {}),
      },
    });
    for (const [i, e] of fleet.engines.entries()) {
      engines.push({
        url: e.url,
        kv: `tcp://${e.host}:${e.port + 1000}`,
        id: `${e.host}:${e.port}`,
        stop: i === 0 ? () => fleet.stop() : async () => {},
      });
    }
  } else {
    for (const pair of (arg(argv, '--vllm') ?? '').split(',').filter((x) => x !== '')) {
      const [url, kv] = pair.split('=') as [string, string];
      engines.push({ url, kv, id: new URL(url).host, stop: async () => {} });
    }
  }
  const modes = ['approximate', 'precise'] as const;
  const out: Record<string, unknown> = {};
  for (const [mi, mode] of modes.entries()) {
    const config = defaultConfig({
      strategy: 'cache-aware',
      endpoints: engines.map((e) => ({ address: e.id, models: [model] })),
      ...(mode === 'precise'
        ? {
            cacheAware: {
              preciseIndex: {
                mode: 'hybrid',
                models: [{ name: model, tokenizerDir: modelDir, blockSize }],
                kvEvents: { urls: Object.fromEntries(engines.map((e) => [e.id, e.kv])) },
              },
            },
          }
        : {}),
    });
    const scheduler = createScheduler(config, { clock: systemClock, rng: seededRng(1) });
    scheduler.start();
    await sleep(1000); // tokenizer load, subscriptions
    const rng = seededRng(100 + mi);
    const systems = Array.from({ length: systemsN }, () => text(rng, systemChars));
    const recs: Rec[] = [];
    const inflight: Promise<void>[] = [];
    const t0 = Date.now();
    for (let i = 0; i < requests; i++) {
      const body = Buffer.from(
        JSON.stringify({
          model,
          messages: [
            { role: 'system', content: systems[Math.floor(rng.next() * systemsN)]! },
            { role: 'user', content: text(rng, userChars) },
          ],
          max_tokens: 4,
          stream: true,
          stream_options: { include_usage: true },
        }),
      );
      const p = extractPrompt('/v1/chat/completions', body, {
        maxPrefixChars: config.requests.maxPrefixChars,
        charsPerToken: config.requests.charsPerToken,
      });
      const ticket = scheduler.route({
        requestId: `${mode}-${i}`,
        model,
        prefix: p.prefix,
        promptChars: p.promptChars,
        promptTokens: p.promptTokens,
        stream: true,
        arrivalMs: systemClock.nowMs(),
        ...(p.input ? { promptInput: p.input } : {}),
      });
      const engine = engines.find((e) => e.id === ticket.decision.endpoint.id)!;
      inflight.push(
        (async () => {
          const start = performance.now();
          let ttft = Number.NaN;
          let usage: { prompt_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } } | undefined;
          const r = await fetch(`${engine.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          let buf = '';
          for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
            if (Number.isNaN(ttft)) {
              ttft = performance.now() - start;
              ticket.firstByte?.();
            }
            buf += Buffer.from(chunk).toString('utf8');
          }
          for (const line of buf.split('\n')) {
            if (!line.startsWith('data: {')) continue;
            const j = JSON.parse(line.slice(6)) as { usage?: typeof usage };
            if (j.usage) usage = j.usage;
          }
          const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
          ticket.finish({
            aborted: false,
            status: r.status,
            ...(usage?.prompt_tokens !== undefined ? { promptTokens: usage.prompt_tokens } : {}),
            cachedTokens: cached,
            servedBy: engine.id,
          });
          recs.push({ ttftMs: ttft, prompt: usage?.prompt_tokens ?? 0, cached, engine: engine.id });
        })(),
      );
      await sleep((-Math.log(1 - rng.next()) / qps) * 1000);
    }
    await Promise.all(inflight);
    scheduler.stop();
    const prompt = recs.reduce((a, r) => a + r.prompt, 0);
    const cached = recs.reduce((a, r) => a + r.cached, 0);
    const perEngine: Record<string, number> = {};
    for (const r of recs) perEngine[r.engine] = (perEngine[r.engine] ?? 0) + 1;
    out[mode] = {
      seconds: (Date.now() - t0) / 1000,
      tokenHitRate: prompt === 0 ? 0 : cached / prompt,
      ttftMs: distribution(recs.map((r) => r.ttftMs)),
      requestsPerEngine: perEngine,
    };
  }
  const a = out['approximate'] as { tokenHitRate: number; ttftMs: { p50: number; p99: number } };
  const p = out['precise'] as typeof a;
  const result = {
    bench: 'kv-routing-ab',
    engines: kind,
    commit: gitOutput(['rev-parse', 'HEAD']),
    dirty: gitOutput(['status', '--porcelain']).length > 0,
    config: {
      requests,
      qps,
      model,
      blockSize,
      systems: systemsN,
      systemChars,
      userChars,
      engines: engines.length,
      kvCacheBlocks: kind === 'sim' ? kvBlocks : 'engine flag',
      timeScale: kind === 'sim' ? timeScale : undefined,
    },
    results: out,
  };
  const md = [
    `# Cache-aware routing, approximate vs precise (hybrid) index (${kind}, ${engines.length} engines)`,
    '',
    `commit ${result.commit}${result.dirty ? ' (dirty)' : ''}; ${requests} requests per mode at ${qps} req/s (Poisson), ${systemsN} system prompts of ${systemChars} chars`,
    '',
    '| index | token hit rate | TTFT p50 ms | TTFT p99 ms |',
    '|---|---|---|---|',
    `| approximate | ${(100 * a.tokenHitRate).toFixed(1)}% | ${a.ttftMs.p50.toFixed(0)} | ${a.ttftMs.p99.toFixed(0)} |`,
    `| precise (hybrid) | ${(100 * p.tokenHitRate).toFixed(1)}% | ${p.ttftMs.p50.toFixed(0)} | ${p.ttftMs.p99.toFixed(0)} |`,
    '',
    `precise / approximate: hit rate ${(p.tokenHitRate / a.tokenHitRate).toFixed(2)}x, TTFT p50 ${(p.ttftMs.p50 / a.ttftMs.p50).toFixed(2)}x, p99 ${(p.ttftMs.p99 / a.ttftMs.p99).toFixed(2)}x`,
    '',
  ].join('\n');
  emitRun(arg(argv, '--out'), result, md);
  await Promise.all(engines.map((e) => e.stop()));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
