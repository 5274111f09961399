import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvEventStream } from '../../../src/kv-events/kv-event-stream.js';
import { EventFedIndex } from '../../../src/precise-index/event-fed-index.js';
import { contender } from '../../../src/simulate/contenders.js';
import { BatchingEngine, GPU_LIKE_ENGINE_MODEL } from '../../../src/simulate/engine/batching-engine.js';
import { simulate, simulateAsync } from '../../../src/simulate/fleet-simulator.js';
import { KvEventFeed } from '../../../src/simulate/kv-event-feed.js';
import type { SimEngine } from '../../../src/simulate/policy.js';
import type { SimEngineSpec, SimRequest } from '../../../src/simulate/types.js';
import { VirtualTime } from '../../../src/simulate/virtual-time.js';
import { ModelTokenizer } from '../../../src/tokenization/model-tokenizer.js';
import { createTokenBlockHasher, type TokenBlockHasher } from '../../../src/tokenization/token-block-hasher.js';
import { seededRng } from '../../../src/util/rng.js';
import { writeTinyTokenizer } from '../../kit/tiny-tokenizer.js';

const BS = 16;

function oneEngine(time: VirtualTime): SimEngine {
  return {
    index: 0,
    id: '127.0.0.2:10000',
    engine: new BatchingEngine({ ...GPU_LIKE_ENGINE_MODEL, kvCacheBlocks: 64 }, { clock: time, scheduler: time }),
    alive: true,
  };
}

/** Runs one request of `blocks` full blocks on the engine; returns its prompt. */
function serve(e: SimEngine, seed: number, blocks: number): number[] {
  const rng = seededRng(seed);
  const prompt = Array.from({ length: blocks * BS + 1 }, () => 10 + rng.int(5000));
  e.engine.submit({ promptTokens: prompt, outputTokens: 2, finishReason: 'length' }, { onToken() {}, onFinish() {}, onError() {} });
  return prompt;
}

describe('fleet simulator KV events', () => {
  let hasher: TokenBlockHasher;
  before(async () => {
    hasher = await createTokenBlockHasher();
  });

  /** An engine, the feed, and the router's event-fed index fed through its per-stream handling. */
  function rig(model: { lagMs?: number; loss?: number }) {
    const time = new VirtualTime();
    const e = oneEngine(time);
    const feed = new KvEventFeed(time, [e], model, 1);
    const index = new EventFedIndex(hasher, { endpoints: 1 });
    const stream = new KvEventStream(
      index,
      { endpointIndex: 0, endpointId: e.id, model: 'm' },
      { clock: time, wallMs: () => time.nowMs() },
    );
    feed.subscribe(0, (f) => stream.receive(f));
    const held = (prompt: number[]): number => index.match(hasher.hash('m', prompt, BS, Math.floor(prompt.length / BS)))[0] ?? 0;
    return { time, e, feed, index, stream, held };
  }

  it('delivers the blocks an engine computed to the router lagMs after its step, in order', () => {
    const { time, e, stream, held } = rig({ lagMs: 500 });
    const p = serve(e, 1, 8);
    time.run(400); // prefilled (a few ms), but the message is still on its way
    expect(held(p)).to.equal(0);
    time.run(2000);
    expect(held(p)).to.equal(8);
    expect(stream.messages).to.be.greaterThan(0);
    expect(stream.lagMax).to.be.closeTo(500, 1e-6);
    expect(stream.gaps).to.equal(0);
  });

  it('a lost message is a sequence gap: the router resyncs that engine, as for a dropped ZMQ message', () => {
    const { time, e, feed, index, stream } = rig({ loss: 0.5 });
    for (let i = 0; i < 12; i++) {
      serve(e, 100 + i, 8);
      time.run(time.nowMs() + 1000);
    }
    const st = feed.stats();
    expect(st.lost).to.be.greaterThan(0);
    expect(st.delivered + st.lost).to.equal(st.published);
    expect(stream.gaps).to.be.greaterThan(0);
    expect(index.stats(0).resyncs).to.equal(stream.gaps);
  });

  describe('the real router with a precise index', () => {
    let dir: string;
    let tok: ModelTokenizer;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'sim-kv-'));
      writeTinyTokenizer(dir);
      tok = await ModelTokenizer.fromDirectory(dir);
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    /** `groups` shared prefixes; requests of a group arrive together (siblings of a burst). */
    function workload(n: number, groups: number): SimRequest[] {
      const rng = seededRng(4);
      const text = (k: number, words: number): string => {
        const r = seededRng(k);
        return Array.from({ length: words }, () => ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'ran'][r.int(8)]).join(' ');
      };
      const prefixes = Array.from({ length: groups }, (_, g) => text(50 + g, 300));
      return Array.from({ length: n }, (_, i) => ({
        id: `r${i}`,
        atMs: i * 40,
        api: 'completions' as const,
        prompt: `${prefixes[rng.int(groups)]!} ${text(1000 + i, 20)}`,
        outputTokens: 4,
      }));
    }
    const fleet: SimEngineSpec[] = Array.from({ length: 4 }, () => ({ model: { ...GPU_LIKE_ENGINE_MODEL, kvCacheBlocks: 150 } }));

    it('needs simulateAsync (the plugin loads its tokenizer), then routes on the events; losing them costs hits', async () => {
      const kv = contender('cacheroute:cache-aware+kv-events', { kvEvents: { tokenizerDir: dir, blockSize: BS } });
      const reqs = workload(300, 16);
      expect(() => simulate(reqs, fleet, kv, { seed: 1, engineTokenizer: tok })).to.throw(/simulateAsync/);
      const rr = await simulateAsync(reqs, fleet, contender('round-robin'), { seed: 1, engineTokenizer: tok });
      const clean = await simulateAsync(reqs, fleet, kv, { seed: 1, engineTokenizer: tok });
      const lossy = await simulateAsync(reqs, fleet, kv, { seed: 1, engineTokenizer: tok, kvEvents: { loss: 0.3 } });
      expect(clean.summary.ok).to.equal(300);
      expect(clean.summary.hitRate).to.be.greaterThan(rr.summary.hitRate + 0.2);
      // Every gap resyncs an engine: its entries go, and it is scored approximately from routings made since.
      expect(lossy.summary.hitRate).to.be.lessThan(clean.summary.hitRate);
    });

    it('the variants say what they need', () => {
      expect(() => contender('cacheroute:cache-aware+kv-hybrid')).to.throw(/kvEvents/);
      expect(() => contender('cacheroute:cache-aware+nope')).to.throw(/kv-events/);
    });
  });
});
