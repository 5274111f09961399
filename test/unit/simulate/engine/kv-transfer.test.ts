/**
 * KV from outside the engine (P/D disaggregation): the transfer cost model, a request given
 * a prefill engine's blocks, and the shared store two engines use.
 */
import { expect } from 'chai';
import { ManualClock } from '../../../../src/util/clock.js';
import {
  BatchingEngine,
  GPU_LIKE_ENGINE_MODEL,
  type EngineModelConfig,
  type SequenceResult,
} from '../../../../src/simulate/engine/batching-engine.js';
import { blockHashes } from '../../../../src/simulate/engine/block-hash.js';
import { GPU_LIKE_KV_TRANSFER, kvTransferMs, MemoryKvStore, type SharedKvStore } from '../../../../src/simulate/engine/kv-transfer.js';
import { ManualStepScheduler } from '../../../../src/simulate/engine/step-scheduler.js';

const CFG: EngineModelConfig = {
  ...GPU_LIKE_ENGINE_MODEL,
  blockSize: 16,
  kvCacheBlocks: 1024,
  maxNumSeqs: 8,
  stepOverheadMs: 5,
  prefillMsPerToken: 0.1,
  decodeMsPerSeq: 1,
  kvTransferLatencyMs: 2,
  kvBytesPerToken: 1000,
  kvTransferGBps: 1, // 1e6 bytes per ms: 1,000 tokens per ms
};

function toks(base: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => base + i);
}

function run(clock: ManualClock, sched: ManualStepScheduler, overrides: Partial<EngineModelConfig> = {}, kvStore?: SharedKvStore) {
  const engine = new BatchingEngine({ ...CFG, ...overrides }, { clock, scheduler: sched, ...(kvStore ? { kvStore } : {}) });
  const submit = (promptTokens: number[], outputTokens: number, externalBlocks?: number) => {
    const t: { first?: number; result?: SequenceResult; error?: Error; abort: () => void } = { abort: () => {} };
    const h = engine.submit(
      { promptTokens, outputTokens, finishReason: 'length', ...(externalBlocks !== undefined ? { externalBlocks } : {}) },
      {
        onToken: (i) => {
          if (i === 0) t.first = clock.nowMs();
        },
        onFinish: (r) => {
          t.result = r;
        },
        onError: (e) => {
          t.error = e;
        },
      },
    );
    t.abort = () => h.abort();
    return t;
  };
  return { engine, submit };
}

describe('sim-engine KV transfer (P/D)', () => {
  it('costs latency + tokens x bytes / bandwidth, and nothing for no tokens', () => {
    expect(kvTransferMs(GPU_LIKE_KV_TRANSFER, 0)).to.equal(0);
    // 2,000 tokens x 128 KiB over 25 GB/s + 1 ms
    expect(kvTransferMs(GPU_LIKE_KV_TRANSFER, 2000)).to.be.closeTo(1 + (2000 * 131_072) / 25e6, 1e-9);
    expect(kvTransferMs(CFG, 1000)).to.be.closeTo(3, 1e-9);
  });

  it('loads given blocks for the transfer time instead of computing them, then prefills only the rest', () => {
    const clock = new ManualClock(0);
    const sched = new ManualStepScheduler(clock);
    const { engine, submit } = run(clock, sched);
    // 1,000-token prompt: 62 full blocks (992 tokens) transferable.
    const r = submit(toks(0, 1000), 2, 62);
    sched.runAll();
    const transfer = 2 + (992 * 1000) / 1e6;
    // transfer, then one step with the 8 uncomputed tokens
    expect(r.first).to.be.closeTo(transfer + 5 + 8 * 0.1, 1e-9);
    expect(r.result!.cachedTokens).to.equal(992);
    expect(r.result!.externalTokens).to.equal(992);
    expect(r.result!.transferMs).to.be.closeTo(transfer, 1e-9);
    const c = engine.snapshot().counters;
    expect(c.kvTransfers).to.equal(1);
    expect(c.kvTransferTokens).to.equal(992);
    // The loaded blocks are now this engine's cache: the same prompt hits locally, with no transfer.
    const again = submit(toks(0, 1000), 1, 62);
    sched.runAll();
    expect(again.result!.cachedTokens).to.equal(992);
    expect(again.result!.externalTokens).to.equal(0);
    expect(engine.snapshot().counters.kvTransfers).to.equal(1);
  });

  it('costs a cold request the whole prefill when no blocks are given (the split must beat this)', () => {
    const clock = new ManualClock(0);
    const sched = new ManualStepScheduler(clock);
    const { submit } = run(clock, sched);
    const r = submit(toks(0, 1000), 1);
    sched.runAll();
    expect(r.first).to.be.closeTo(5 + 1000 * 0.1, 1e-9);
    expect(r.result!.externalTokens).to.equal(0);
  });

  it('transfers only the part past its own cache hit, and never the last prompt token', () => {
    const clock = new ManualClock(0);
    const sched = new ManualStepScheduler(clock);
    const { submit } = run(clock, sched);
    submit(toks(0, 320), 1); // caches 20 blocks locally
    sched.runAll();
    const t0 = clock.nowMs();
    const r = submit(toks(0, 640), 1, 40); // 40 full blocks = the whole prompt: capped at 39
    sched.runAll();
    expect(r.result!.externalTokens).to.equal(19 * 16);
    expect(r.result!.cachedTokens).to.equal(39 * 16);
    expect(r.first! - t0).to.be.closeTo(2 + (19 * 16 * 1000) / 1e6 + 5 + 16 * 0.1, 1e-9);
  });

  it('a request waiting for its KV takes no step budget from the others', () => {
    const clock = new ManualClock(0);
    const sched = new ManualStepScheduler(clock);
    const { submit } = run(clock, sched, { kvTransferLatencyMs: 50 });
    const loading = submit(toks(0, 1000), 1, 62);
    const other = submit(toks(5000, 100), 1);
    sched.runAll();
    expect(other.first).to.be.closeTo(5 + 100 * 0.1, 1e-9);
    expect(loading.first!).to.be.greaterThan(50);
  });

  it('an abort during the load frees its blocks and never emits', () => {
    const clock = new ManualClock(0);
    const sched = new ManualStepScheduler(clock);
    const { engine, submit } = run(clock, sched, { kvTransferLatencyMs: 50 });
    const r = submit(toks(0, 1000), 3, 62);
    sched.runNext(); // kick: admitted, now loading
    expect(engine.snapshot().kvUsedBlocks).to.be.greaterThan(0);
    r.abort();
    sched.runAll();
    expect(r.first).to.equal(undefined);
    expect(engine.snapshot().kvUsedBlocks).to.equal(0);
    expect(engine.snapshot().counters.aborted).to.equal(1);
  });

  it('stop() fails a request that is waiting for its KV', () => {
    const clock = new ManualClock(0);
    const sched = new ManualStepScheduler(clock);
    const { engine, submit } = run(clock, sched, { kvTransferLatencyMs: 50 });
    const r = submit(toks(0, 1000), 3, 62);
    sched.runNext();
    engine.stop();
    expect(r.error?.message).to.equal('engine stopped');
  });

  it('with a shared store, one engine loads the blocks another computed (ExampleConnector)', () => {
    const clock = new ManualClock(0);
    const sched = new ManualStepScheduler(clock);
    const store = new MemoryKvStore();
    const a = run(clock, sched, {}, store);
    const b = run(clock, sched, {}, store);
    const prompt = toks(0, 1000);
    const p = a.submit(prompt, 1);
    sched.runAll();
    expect(p.result!.externalTokens).to.equal(0);
    expect(store.matchPrefix(blockHashes(prompt, 16))).to.equal(62);
    const d = b.submit(prompt, 4);
    sched.runAll();
    expect(d.result!.cachedTokens).to.equal(62 * 16); // the 8-token tail is computed here
    expect(d.result!.externalTokens).to.equal(62 * 16);
    // A prompt the store does not hold is computed.
    const cold = b.submit(toks(9000, 500), 1);
    sched.runAll();
    expect(cold.result!.externalTokens).to.equal(0);
  });

  it('the memory store drops its oldest blocks past its bound', () => {
    const s = new MemoryKvStore(3);
    s.put([1, 2, 3]);
    s.put([4]);
    expect(s.size).to.equal(3);
    expect(s.matchPrefix([1, 2])).to.equal(0);
    expect(s.matchPrefix([2, 3, 4])).to.equal(3);
  });

  it('refuses a zero bandwidth', () => {
    const clock = new ManualClock(0);
    expect(() => run(clock, new ManualStepScheduler(clock), { kvTransferGBps: 0 })).to.throw(RangeError, /kvTransferGBps/);
  });
});
