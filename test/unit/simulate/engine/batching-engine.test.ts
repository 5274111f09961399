import { expect } from 'chai';
import fc from 'fast-check';
import { ManualClock } from '../../../../src/util/clock.js';
import {
  BatchingEngine,
  CapacityError,
  GPU_LIKE_ENGINE_MODEL,
  type EngineModelConfig,
  type FinishReason,
  type SequenceResult,
} from '../../../../src/simulate/engine/batching-engine.js';
import { ManualStepScheduler } from '../../../../src/simulate/engine/step-scheduler.js';
import { blockHashes } from '../../../../src/simulate/engine/block-hash.js';

const CFG: EngineModelConfig = {
  ...GPU_LIKE_ENGINE_MODEL,
  blockSize: 16,
  kvCacheBlocks: 1024,
  maxNumSeqs: 8,
  maxBatchedTokens: 2048,
  stepOverheadMs: 5,
  prefillMsPerToken: 0.1,
  decodeMsPerSeq: 1,
  timeScale: 1,
};

interface Tracked {
  readonly tokenTimes: number[];
  result?: SequenceResult;
  error?: Error;
  cachedAtFirst?: number;
  abort(): void;
}

function harness(overrides: Partial<EngineModelConfig> = {}) {
  const clock = new ManualClock(0);
  const sched = new ManualStepScheduler(clock);
  const engine = new BatchingEngine({ ...CFG, ...overrides }, { clock, scheduler: sched });
  const submit = (promptTokens: number[], outputTokens = 1, finishReason: FinishReason = 'length'): Tracked => {
    const t: Tracked = { tokenTimes: [], abort: () => {} };
    const h = engine.submit(
      { promptTokens, outputTokens, finishReason },
      {
        onToken: (i, cached) => {
          expect(i).to.equal(t.tokenTimes.length);
          if (i === 0) t.cachedAtFirst = cached;
          t.tokenTimes.push(clock.nowMs());
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
  return { clock, sched, engine, submit };
}

/** Token ids base, base+1, ... (distinct bases give disjoint prompts). */
function toks(base: number, n: number): number[] {
  return Array.from({ length: n }, (_, i) => base + i);
}

const close = (a: number, b: number): void => {
  expect(a).to.be.closeTo(b, 1e-9);
};

describe('sim-engine BatchingEngine', () => {
  it('charges a cold prefill overhead + tokens x per-token cost and reports TTFT at the end of that step', () => {
    const h = harness();
    const r = h.submit(toks(0, 1000), 3);
    h.sched.runAll();
    // step 1: 1000 prefill tokens; steps 2-3: one decode each.
    close(r.tokenTimes[0]!, 5 + 1000 * 0.1);
    close(r.tokenTimes[1]! - r.tokenTimes[0]!, 5 + 1);
    close(r.tokenTimes[2]! - r.tokenTimes[1]!, 5 + 1);
    expect(r.result?.completionTokens).to.equal(3);
    close(r.result!.ttftMs, 105);
    expect(r.result?.cachedTokens).to.equal(0);
  });

  it('splits the shared prefill budget across requests (chunked prefill)', () => {
    const h = harness({ maxBatchedTokens: 2048 });
    const a = h.submit(toks(0, 1500), 2);
    const b = h.submit(toks(10_000, 1500), 1);
    h.sched.runAll();
    // step 1: a 1500 + b 548 = 2048 prefill tokens -> a's first token.
    const step1 = 5 + 2048 * 0.1;
    close(a.tokenTimes[0]!, step1);
    // step 2: b's remaining 952 prefill + a's decode.
    const step2 = 5 + 952 * 0.1 + 1;
    close(b.tokenTimes[0]!, step1 + step2);
    close(a.tokenTimes[1]!, step1 + step2);
  });

  it('gives a prefix hit a much lower TTFT than a miss and reports cached tokens', () => {
    const h = harness();
    const shared = toks(0, 2000);
    const first = h.submit([...shared, ...toks(50_000, 40)], 1);
    h.sched.runAll();
    const hit = h.submit([...shared, ...toks(60_000, 40)], 1);
    h.sched.runAll();
    const miss = h.submit(toks(70_000, 2040), 1);
    h.sched.runAll();
    expect(first.result!.cachedTokens).to.equal(0);
    expect(hit.result!.cachedTokens).to.equal(2000); // 125 full shared blocks
    expect(hit.cachedAtFirst).to.equal(2000);
    expect(miss.result!.cachedTokens).to.equal(0);
    close(hit.result!.ttftMs, 5 + 40 * 0.1);
    close(miss.result!.ttftMs, 5 + 2040 * 0.1);
    expect(hit.result!.ttftMs).to.be.lessThan(miss.result!.ttftMs / 10);
    const c = h.engine.snapshot().counters;
    expect(c.prefixQueryTokens).to.equal(3 * 2040);
    expect(c.prefixHitTokens).to.equal(2000);
  });

  it('charges attention over the context: a hit behind a long cached prefix and a long cold prefill cost more', () => {
    const h = harness({ prefillContextMsPerKToken: 0.02, decodeContextMsPerKToken: 2 });
    const shared = toks(0, 2000);
    h.submit([...shared, ...toks(50_000, 40)], 1);
    h.sched.runAll();
    const hit = h.submit([...shared, ...toks(60_000, 40)], 1);
    h.sched.runAll();
    // 40 new tokens at positions 2000..2039 attend over 40 × 2000 + 40 × 41 / 2 = 80,820 token-positions.
    close(hit.result!.ttftMs, 5 + 40 * 0.1 + (80_820 * 0.02) / 1000);
    const cold = h.submit(toks(70_000, 1000), 2);
    h.sched.runAll();
    // 1000 tokens from position 0: 1000 × 1001 / 2 = 500,500; the decode step reads a context of 1001 tokens.
    close(cold.result!.ttftMs, 5 + 1000 * 0.1 + (500_500 * 0.02) / 1000);
    close(cold.tokenTimes[1]! - cold.tokenTimes[0]!, 5 + 1 + (1001 * 2) / 1000);
  });

  it('counts only full blocks and always recomputes the last prompt token', () => {
    const h = harness();
    h.submit(toks(0, 50), 1); // blocks 0..2 full (48 tokens), 2 tokens partial
    h.sched.runAll();
    const same = h.submit(toks(0, 50), 1);
    h.sched.runAll();
    expect(same.result!.cachedTokens).to.equal(48);

    h.submit(toks(1000, 48), 1); // exactly 3 blocks
    h.sched.runAll();
    const aligned = h.submit(toks(1000, 48), 1);
    h.sched.runAll();
    expect(aligned.result!.cachedTokens).to.equal(32); // capped at floor(47/16) blocks

    const partial = h.submit([...toks(0, 40), ...toks(9000, 20)], 1); // shares 40 tokens = 2.5 blocks
    h.sched.runAll();
    expect(partial.result!.cachedTokens).to.equal(32);
  });

  it("keys a request's blocks by the caller's precomputed keys when it gives them", () => {
    const h = harness();
    const keys = blockHashes(toks(0, 48), 16);
    const got: number[] = [];
    const listener = { onToken: () => {}, onFinish: (r: SequenceResult) => void got.push(r.cachedTokens), onError: () => {} };
    h.engine.submit({ promptTokens: toks(0, 48), blockHashes: keys, outputTokens: 1, finishReason: 'length' }, listener);
    h.sched.runAll();
    // Other tokens under the same keys hit (the cache matches keys, and these are the caller's) ...
    h.engine.submit({ promptTokens: toks(500, 48), blockHashes: keys, outputTokens: 1, finishReason: 'length' }, listener);
    h.sched.runAll();
    // ... and without keys the engine hashes the tokens itself: a miss.
    h.engine.submit({ promptTokens: toks(500, 48), outputTokens: 1, finishReason: 'length' }, listener);
    h.sched.runAll();
    expect(got).to.deep.equal([0, 32, 0]);
  });

  it('gives no hit to identical requests prefilled in the same step (blocks are not computed yet)', () => {
    const h = harness();
    const a = h.submit(toks(0, 320), 1);
    const b = h.submit(toks(0, 320), 1);
    h.sched.runAll();
    expect(a.result!.cachedTokens).to.equal(0);
    expect(b.result!.cachedTokens).to.equal(0);
    const c = h.submit(toks(0, 320), 1);
    h.sched.runAll();
    expect(c.result!.cachedTokens).to.equal(304);
  });

  it('hits blocks a long prefill has already computed in earlier chunks', () => {
    const h = harness({ maxBatchedTokens: 512 });
    const long = h.submit(toks(0, 2048), 1);
    h.sched.runNext(); // kick
    h.sched.runNext(); // step 1: first 512 tokens computed
    const follower = h.submit(toks(0, 2048), 1);
    h.sched.runAll();
    expect(long.result!.cachedTokens).to.equal(0);
    expect(follower.result!.cachedTokens).to.be.at.least(512);
    expect(follower.result!.cachedTokens % 16).to.equal(0);
  });

  it('slows decoding requests on the engine while a long cache-miss prefill runs', () => {
    const h = harness({ maxBatchedTokens: 1024 });
    const decoder = h.submit(toks(0, 16), 6);
    for (let i = 0; i < 4; i++) h.sched.runNext(); // kick + prefill + 2 decode steps
    expect(decoder.tokenTimes.length).to.equal(3);
    const calmItl = decoder.tokenTimes[2]! - decoder.tokenTimes[1]!;
    // The step producing token 3 is already running; the long prefill joins the next one.
    h.submit(toks(100_000, 4096), 1);
    h.sched.runAll();
    close(decoder.tokenTimes[3]! - decoder.tokenTimes[2]!, calmItl);
    const busyItl = decoder.tokenTimes[4]! - decoder.tokenTimes[3]!;
    close(calmItl, 5 + 1);
    close(busyItl, 5 + 1024 * 0.1 + 1);
    expect(busyItl).to.be.greaterThan(calmItl * 10);
  });

  it('queues FIFO beyond max-num-seqs and admits in arrival order', () => {
    const h = harness({ maxNumSeqs: 2 });
    const rs = [0, 1, 2, 3].map((i) => h.submit(toks(i * 1000, 32), 4));
    h.sched.runNext(); // kick -> step 1 starts
    let s = h.engine.snapshot();
    expect(s.running).to.equal(2);
    expect(s.waiting).to.equal(2);
    h.sched.runAll();
    s = h.engine.snapshot();
    expect(s.running).to.equal(0);
    expect(s.waiting).to.equal(0);
    const firsts = rs.map((r) => r.tokenTimes[0]!);
    expect(firsts[0]).to.equal(firsts[1]);
    expect(firsts[2]).to.be.greaterThan(firsts[1]!);
    expect(firsts[2]).to.equal(firsts[3]);
    // Requests 2 and 3 waited for 0 and 1 to finish.
    expect(rs[2]!.result!.queueMs).to.be.at.least(rs[0]!.result!.e2eMs);
  });

  it('holds the queue head when its KV blocks do not fit, and preempts when decode runs out of blocks', () => {
    // 10 blocks: two 64-token prompts (4 blocks each) fit, their decode growth does not.
    const h = harness({ kvCacheBlocks: 10 });
    const a = h.submit(toks(0, 64), 40);
    const b = h.submit(toks(1000, 64), 40);
    h.sched.runAll();
    expect(a.result?.completionTokens).to.equal(40);
    expect(b.result?.completionTokens).to.equal(40);
    const c = h.engine.snapshot().counters;
    expect(c.preemptions).to.be.greaterThan(0);
    expect(b.result!.preemptions + a.result!.preemptions).to.equal(c.preemptions);
    expect(h.engine.snapshot().kvUsedBlocks).to.equal(0);
  });

  it('rejects requests that can never fit the KV cache', () => {
    const h = harness({ kvCacheBlocks: 4 });
    expect(() => h.submit(toks(0, 64), 1)).to.throw(CapacityError);
  });

  it('frees blocks on abort and never emits for aborted requests', () => {
    const h = harness();
    const a = h.submit(toks(0, 4000), 5);
    h.sched.runNext();
    expect(h.engine.snapshot().kvUsedBlocks).to.equal(250);
    a.abort();
    expect(h.engine.snapshot().kvUsedBlocks).to.equal(0);
    h.sched.runAll();
    expect(a.tokenTimes).to.have.length(0);
    expect(a.result).to.equal(undefined);
    expect(h.engine.snapshot().counters.aborted).to.equal(1);
  });

  it('leaves no timer pending when idle', () => {
    const h = harness();
    expect(h.sched.size).to.equal(0);
    h.submit(toks(0, 100), 3);
    expect(h.sched.size).to.equal(1);
    h.sched.runAll();
    expect(h.sched.size).to.equal(0);
    expect(h.engine.busy).to.equal(false);
  });

  it('scales every step with timeScale', () => {
    const fast = harness({ timeScale: 0.5 });
    const r = fast.submit(toks(0, 1000), 1);
    fast.sched.runAll();
    close(r.result!.ttftMs, (5 + 100) * 0.5);
  });

  it('evicts cached blocks when the KV cache shrinks at runtime', () => {
    const h = harness();
    h.submit(toks(0, 320), 1);
    h.sched.runAll();
    expect(h.engine.snapshot().kvFreeCachedBlocks).to.equal(20);
    h.engine.reconfigure({ kvCacheBlocks: 8 });
    expect(h.engine.snapshot().kvFreeCachedBlocks).to.equal(8);
    expect(h.engine.snapshot().kvCapacityBlocks).to.equal(8);
    h.engine.clearCache();
    const again = h.submit(toks(0, 100), 1);
    h.sched.runAll();
    expect(again.result!.cachedTokens).to.equal(0);
  });

  it('keeps its invariants on random workloads (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            prefix: fc.integer({ min: 0, max: 3 }),
            prefixLen: fc.integer({ min: 0, max: 300 }),
            suffixLen: fc.integer({ min: 1, max: 200 }),
            out: fc.integer({ min: 1, max: 30 }),
            delay: fc.integer({ min: 0, max: 50 }),
            abortAfter: fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        fc.integer({ min: 40, max: 200 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 64, max: 1024 }),
        (reqs, kvBlocks, maxNumSeqs, budget) => {
          const h = harness({ kvCacheBlocks: kvBlocks, maxNumSeqs, maxBatchedTokens: budget });
          const tracked: { t: Tracked; out: number; promptLen: number; aborted: boolean }[] = [];
          let uniq = 1_000_000;
          for (const r of reqs) {
            h.clock.advance(r.delay);
            const prompt = [...toks(r.prefix * 10_000, r.prefixLen), ...toks((uniq += 1000), r.suffixLen)];
            const t = h.submit(prompt, r.out);
            tracked.push({ t, out: r.out, promptLen: prompt.length, aborted: false });
            if (r.abortAfter !== undefined && r.abortAfter < 20) {
              t.abort();
              tracked[tracked.length - 1]!.aborted = true;
            }
            h.sched.runNext();
          }
          h.sched.runAll(100_000);
          for (const x of tracked) {
            if (x.aborted) continue;
            expect(x.t.error).to.equal(undefined);
            expect(x.t.tokenTimes).to.have.length(x.out);
            const res = x.t.result!;
            expect(res.completionTokens).to.equal(x.out);
            expect(res.cachedTokens % 16).to.equal(0);
            expect(res.cachedTokens).to.be.lessThan(x.promptLen);
            expect(res.ttftMs).to.be.at.least(0);
            for (let i = 1; i < x.t.tokenTimes.length; i++) expect(x.t.tokenTimes[i]!).to.be.greaterThan(x.t.tokenTimes[i - 1]!);
          }
          const s = h.engine.snapshot();
          expect(s.running + s.waiting).to.equal(0);
          expect(s.kvUsedBlocks).to.equal(0);
          expect(s.kvFreeCachedBlocks).to.be.at.most(kvBlocks);
          expect(s.counters.prefixHitTokens).to.be.at.most(s.counters.prefixQueryTokens);
          expect(h.sched.size).to.equal(0);
        },
      ),
      { seed: 42, numRuns: 150 },
    );
  });
});
