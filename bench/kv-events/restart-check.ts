/**
 * No stale affinity after an engine restart: warm an engine, watch its KV-event feed, let the
 * engine be restarted (by the launcher or by hand), then check that once the disconnect was
 * seen the precise index predicts 0 cached blocks for the prompts it held, and that the
 * engine indeed had none cached. Then, after the new engine stores them again, predictions
 * are exact again.
 *
 *   node dist/bench/kv-events/restart-check.js --url http://h:p --kv tcp://h:kp --model-dir DIR [--out DIR]
 * Restart the engine while it prints "waiting for the engine to restart".
 */
import { KvEventSubscriber } from '../../src/kv-events/kv-event-subscriber.js';
import { PreciseAffinity } from '../../src/prefix-cache/precise-affinity.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { createTokenBlockHasher } from '../../src/tokenization/token-block-hasher.js';
import { systemClock } from '../../src/util/clock.js';
import { arg } from '../micro/cli-arg.js';
import { gitOutput } from '../micro/git-output.js';
import { emitRun } from './run-output.js';

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const url = arg(argv, '--url')!;
  const kv = arg(argv, '--kv')!;
  const model = arg(argv, '--model') ?? 'tiny-llama';
  const blockSize = Number(arg(argv, '--block-size') ?? 128);
  const tokenizer = await ModelTokenizer.fromDirectory(arg(argv, '--model-dir')!);
  const aff = new PreciseAffinity(
    { mode: 'precise', speculativeTtlMs: 0, resyncWindowMs: 30_000, maxBlocks: 512, endpoints: 1 },
    await createTokenBlockHasher(),
    new Map([[model, { tokenizer, blockSize }]]),
    () => 0,
  );
  const sub = new KvEventSubscriber(aff.events, { clock: systemClock });
  sub.setSources([{ endpointIndex: 0, endpointId: 'e0', url: kv, topic: 'kv-events', model }]);
  await sleep(500);
  const prompts = [0, 1, 2].map((i) => [
    { role: 'system', content: `Restart check ${i}: you are a helpful assistant for the router. `.repeat(40) },
    { role: 'user', content: 'hello' },
  ]);
  const chat = async (messages: unknown): Promise<number> => {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages, max_tokens: 2 }),
    });
    const j = (await r.json()) as { usage?: { prompt_tokens_details?: { cached_tokens?: number } } };
    return j.usage?.prompt_tokens_details?.cached_tokens ?? 0;
  };
  const predicted = (messages: { role: string; content: string }[]): number =>
    aff.events.match(aff.requestKeys(model, { kind: 'chat', messages })!.keys)[0]! * blockSize;
  for (const p of prompts) await chat(p);
  await sleep(300);
  const before = prompts.map((p) => ({ predicted: predicted(p) }));
  process.stdout.write(`warm: predicted ${JSON.stringify(before.map((b) => b.predicted))}; waiting for the engine to restart\n`);
  const deadline = Date.now() + 600_000;
  while (sub.stats()[0]!.disconnects === 0 && Date.now() < deadline) await sleep(100);
  const afterGap = prompts.map((p) => predicted(p));
  const stateAfterGap = aff.events.state(0);
  process.stdout.write(`disconnect seen: predicted ${JSON.stringify(afterGap)} (${stateAfterGap}); waiting for the engine\n`);
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).status === 200) break;
    } catch {
      // still down
    }
    await sleep(1000);
  }
  while (!sub.stats()[0]!.connected && Date.now() < deadline) await sleep(100);
  await sleep(300);
  const predictedOnEmpty = prompts.map((p) => predicted(p));
  const cachedOnEmpty: number[] = [];
  for (const p of prompts) cachedOnEmpty.push(await chat(p));
  await sleep(300);
  const refilled = [];
  for (const p of prompts) refilled.push({ predicted: predicted(p), cached: await chat(p) });
  const result = {
    bench: 'kv-restart-check',
    commit: gitOutput(['rev-parse', 'HEAD']),
    warmPredictedTokens: before.map((b) => b.predicted),
    predictedAfterDisconnect: afterGap,
    stateAfterDisconnect: stateAfterGap,
    predictedOnRestartedEngine: predictedOnEmpty,
    engineCachedOnRestartedEngine: cachedOnEmpty,
    stateAfterRestart: aff.events.state(0),
    afterRefill: refilled,
    stream: sub.stats()[0],
  };
  const md = [
    '# Engine restart: no stale affinity (real vLLM)',
    '',
    `commit ${result.commit}`,
    '',
    `- warm engine, predicted cached tokens: ${JSON.stringify(result.warmPredictedTokens)}`,
    `- once the disconnect was seen: ${JSON.stringify(afterGap)} (state ${stateAfterGap})`,
    `- restarted engine, predicted before any request: ${JSON.stringify(predictedOnEmpty)}; engine's cached_tokens: ${JSON.stringify(cachedOnEmpty)}`,
    `- after the new engine stored them (state ${result.stateAfterRestart}): predicted / cached ${JSON.stringify(refilled.map((r) => [r.predicted, r.cached]))}`,
    '',
  ].join('\n');
  emitRun(arg(argv, '--out'), result, md);
  sub.stop();
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
