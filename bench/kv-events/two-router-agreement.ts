/**
 * Two router processes, each with its own subscriptions to the same engines' KV events, are
 * asked for the affinity of the same requests: do they agree without talking to each other?
 *
 * The parent starts the engines (simulator, or the URLs of running vLLM engines), forks two
 * follower processes (this file with `--role follower`) that subscribe before any traffic,
 * then for each request of a seeded stream: asks both followers which engine holds most of
 * the request (the affinity target; -1 when none holds any block) and how many blocks each
 * engine holds, then sends the request to the engine the first follower named (or a random
 * one when it names none) and waits briefly for its events. Agreement = same target; also
 * reported only over requests where some engine held something.
 *
 *   node dist/bench/kv-events/two-router-agreement.js --engines sim [--requests 300] [--out DIR]
 *   node dist/bench/kv-events/two-router-agreement.js --engines vllm --vllm http://h:p=tcp://h:kp,... --model-dir DIR
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KvEventSubscriber } from '../../src/kv-events/kv-event-subscriber.js';
import { PreciseAffinity } from '../../src/prefix-cache/precise-affinity.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { createTokenBlockHasher } from '../../src/tokenization/token-block-hasher.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import { simProfile } from '../sim-engine/engine-config.js';
import { SimEngineServer } from '../sim-engine/http-server.js';
import { writeTinyTokenizer } from '../../test/kit/tiny-tokenizer.js';
import { arg } from '../micro/cli-arg.js';
import { gitOutput } from '../micro/git-output.js';
import { emitRun } from './run-output.js';
import { wordText } from './word-text.js';
import { sleep } from '../../test/kit/managed-process.js';

interface Ask {
  readonly id: number;
  readonly messages: { role: string; content: string }[];
}
interface Answer {
  readonly id: number;
  readonly matched: number[];
}

const WORDS =
  'the of and to in is that for it as with was on be by this are or at from which an have not but system user assistant cache prefix token block engine router prompt'.split(
    ' ',
  );
const text = (rng: Rng, chars: number): string => wordText(rng, chars, WORDS);

async function follower(argv: string[]): Promise<void> {
  const model = arg(argv, '--model')!;
  const blockSize = Number(arg(argv, '--block-size'));
  const kvs = arg(argv, '--kv')!.split(',');
  const tokenizer = await ModelTokenizer.fromDirectory(arg(argv, '--model-dir')!);
  const aff = new PreciseAffinity(
    { mode: 'precise', speculativeTtlMs: 0, resyncWindowMs: 0, maxBlocks: 512, endpoints: kvs.length },
    await createTokenBlockHasher(),
    new Map([[model, { tokenizer, blockSize }]]),
    () => 0,
  );
  const sub = new KvEventSubscriber(aff.events, { clock: systemClock });
  sub.setSources(kvs.map((url, i) => ({ endpointIndex: i, endpointId: `e${i}`, url, topic: 'kv-events', model })));
  for (let i = 0; i < kvs.length; i++) aff.events.markFresh(i); // subscribed before any traffic
  process.on('message', (m: Ask | 'stop') => {
    if (m === 'stop') {
      sub.stop();
      process.exit(0);
    }
    const rk = aff.requestKeys(model, { kind: 'chat', messages: m.messages })!;
    const matched = [...aff.events.match(rk.keys)].slice(0, kvs.length);
    process.send!({ id: m.id, matched } satisfies Answer);
  });
  process.send!('ready');
}

function ask(child: ChildProcess, q: Ask): Promise<Answer> {
  return new Promise((resolve) => {
    const on = (m: Answer): void => {
      if (m.id !== q.id) return;
      child.off('message', on);
      resolve(m);
    };
    child.on('message', on);
    child.send(q);
  });
}

function target(matched: readonly number[]): number {
  let best = -1;
  let bestN = 0;
  matched.forEach((n, i) => {
    if (n > bestN) {
      best = i;
      bestN = n;
    }
  });
  return best;
}

async function leader(argv: string[]): Promise<void> {
  const kind = arg(argv, '--engines') ?? 'sim';
  const requests = Number(arg(argv, '--requests') ?? 300);
  const seed = Number(arg(argv, '--seed') ?? 9);
  const model = arg(argv, '--model') ?? 'tiny-llama';
  const blockSize = Number(arg(argv, '--block-size') ?? 128);
  const modelDir =
    arg(argv, '--model-dir') ??
    (existsSync('/tmp/kvx/tiny/tokenizer.json') ? '/tmp/kvx/tiny' : writeTinyTokenizer(mkdtempSync(join(tmpdir(), 'kv-two-'))));
  const rng = seededRng(seed);
  const engines: { url: string; kv: string; stop: () => Promise<void> }[] = [];
  if (kind === 'sim') {
    for (let i = 0; i < 3; i++) {
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
      engines.push({ url: s.url, kv: s.kvPublisher!.endpoint, stop: () => s.stop(500) });
    }
  } else {
    for (const pair of (arg(argv, '--vllm') ?? '').split(',').filter((x) => x !== '')) {
      const [url, kv] = pair.split('=') as [string, string];
      engines.push({ url, kv, stop: async () => {} });
    }
  }
  const self = fileURLToPath(import.meta.url);
  const args = [
    '--role',
    'follower',
    '--model',
    model,
    '--block-size',
    String(blockSize),
    '--model-dir',
    modelDir,
    '--kv',
    engines.map((e) => e.kv).join(','),
  ];
  const followers = [fork(self, args), fork(self, args)];
  await Promise.all(followers.map((c) => new Promise<void>((r) => c.once('message', () => r()))));
  await sleep(500); // subscriptions reach the publishers
  const systems = Array.from({ length: 10 }, () => text(rng, 3000));
  let agree = 0;
  let withHit = 0;
  let agreeWithHit = 0;
  let sameCounts = 0;
  const t0 = Date.now();
  for (let i = 0; i < requests; i++) {
    const messages = [
      { role: 'system', content: systems[Math.floor(rng.next() * systems.length)]! },
      { role: 'user', content: text(rng, 120) },
    ];
    const [a, b] = await Promise.all(followers.map((c) => ask(c, { id: i, messages })));
    const ta = target(a!.matched);
    const tb = target(b!.matched);
    if (ta === tb) agree++;
    if (JSON.stringify(a!.matched) === JSON.stringify(b!.matched)) sameCounts++;
    if (ta >= 0 || tb >= 0) {
      withHit++;
      if (ta === tb) agreeWithHit++;
    }
    const e = ta >= 0 && rng.next() < 0.8 ? ta : Math.floor(rng.next() * engines.length);
    const r = await fetch(`${engines[e]!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages, max_tokens: 2, ignore_eos: true }),
    });
    await r.arrayBuffer();
    await sleep(kind === 'sim' ? 15 : 50);
  }
  for (const c of followers) c.send('stop');
  const result = {
    bench: 'kv-two-router-agreement',
    engines: kind,
    commit: gitOutput(['rev-parse', 'HEAD']),
    dirty: gitOutput(['status', '--porcelain']).length > 0,
    config: { requests, seed, model, blockSize, engines: engines.length, kvCacheBlocks: kind === 'sim' ? 72 : 'engine' },
    elapsedSeconds: (Date.now() - t0) / 1000,
    agreement: agree / requests,
    requestsWithAffinity: withHit,
    agreementWithAffinity: withHit === 0 ? null : agreeWithHit / withHit,
    identicalBlockCounts: sameCounts / requests,
  };
  const md = [
    `# Two router processes, same engines' KV events (${kind}, ${engines.length} engines)`,
    '',
    `commit ${result.commit}${result.dirty ? ' (dirty)' : ''}; ${requests} requests`,
    '',
    `- same affinity target: ${(100 * result.agreement).toFixed(1)}% (${agree}/${requests})`,
    `- among the ${withHit} requests with any cached block: ${result.agreementWithAffinity === null ? '-' : (100 * result.agreementWithAffinity).toFixed(1)}%`,
    `- identical per-engine block counts: ${(100 * result.identicalBlockCounts).toFixed(1)}%`,
    '',
  ].join('\n');
  emitRun(arg(argv, '--out'), result, md);
  await Promise.all(engines.map((e) => e.stop()));
}

const argv = process.argv.slice(2);
(arg(argv, '--role') === 'follower' ? follower(argv) : leader(argv)).catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
