/**
 * The peers' published routing rules, written from their documentation as small policies
 * (each with its source). They see what the peer sees: the router's own in-flight books and
 * an index of what it sent where (SGLang's approximate tree, llm-d's approximate prefix
 * index), or the engines' exact cache where the peer reads KV events (Dynamo, LMetric on
 * Dynamo). Peers' policies that cacheroute's plugins express exactly (round-robin,
 * least-request, prefix-hash, power-of-two, llm-d's weighted default profile) run as real
 * plugin graphs instead (contenders.ts).
 *
 * Block keys: the engine model's 16-token chained block hashes of the prompt stand in for
 * the peers' own keys (SGLang's characters, llm-d's 64-character blocks, Dynamo's engine
 * blocks); all of them identify the same shared prefixes.
 */
import type { Contender, Placement, Policy, PolicyContext } from './policy.js';
import type { PreparedRequest } from './prepared-request.js';

const KEY_BLOCK_TOKENS = 16;

/**
 * What a router sent where: per engine an LRU of prefix-block keys, bounded (the peers bound
 * theirs by size or age; 2^20 keys per engine here is beyond any study's working set).
 */
class RoutedIndex {
  private readonly perEngine: Map<number, true>[] = [];
  constructor(
    engines: number,
    private readonly cap = 1 << 20,
  ) {
    for (let i = 0; i < engines; i++) this.perEngine.push(new Map());
  }

  /** Leading keys of `hashes` engine `e` was sent. */
  match(e: number, hashes: readonly number[]): number {
    const m = this.perEngine[e]!;
    let n = 0;
    while (n < hashes.length && m.has(hashes[n]!)) n++;
    return n;
  }

  size(e: number): number {
    return this.perEngine[e]!.size;
  }

  insert(e: number, hashes: readonly number[]): void {
    const m = this.perEngine[e]!;
    for (const h of hashes) {
      m.delete(h);
      m.set(h, true);
    }
    while (m.size > this.cap) m.delete(m.keys().next().value!);
  }
}

/** Router-side books: in-flight requests, uncached prefill tokens not yet past first token, blocks held. */
class Books {
  readonly inflight: Float64Array;
  readonly prefillTokens: Float64Array;
  readonly prefillBlocks: Float64Array;
  readonly decodeBlocks: Float64Array;
  constructor(n: number) {
    this.inflight = new Float64Array(n);
    this.prefillTokens = new Float64Array(n);
    this.prefillBlocks = new Float64Array(n);
    this.decodeBlocks = new Float64Array(n);
  }

  /** Books the request on `e`; the placement undoes it (first token: prefill → decode; end: all). */
  place(e: number, uncachedTokens: number, blocks: number): Placement {
    this.inflight[e]! += 1;
    this.prefillTokens[e]! += uncachedTokens;
    this.prefillBlocks[e]! += blocks;
    let prefilling = true;
    let ended = false;
    const endPrefill = (): void => {
      if (!prefilling) return;
      prefilling = false;
      this.prefillTokens[e]! -= uncachedTokens;
      this.prefillBlocks[e]! -= blocks;
      this.decodeBlocks[e]! += blocks;
    };
    return {
      engines: [e],
      firstToken: endPrefill,
      done: () => {
        if (ended) return;
        ended = true;
        endPrefill();
        this.inflight[e]! -= 1;
        this.decodeBlocks[e]! -= blocks;
      },
    };
  }
}

function alive(ctx: PolicyContext): number[] {
  const out: number[] = [];
  for (const e of ctx.engines) if (e.alive) out.push(e.index);
  return out;
}

/**
 * SGLang / SMG `cache_aware` (sgl-model-gateway/src/policies/cache_aware.rs; defaults of the
 * Rust CLI, lightseekorg/smg model_gateway/src/main.rs: cache_threshold 0.3,
 * balance_abs_threshold 64, balance_rel_threshold 1.5): load = the router's in-flight count;
 * imbalanced (max − min > abs and max > min × rel) → shortest queue; else best match ratio
 * > threshold → best-match worker; else the worker with the smallest tree. The tree is
 * updated with every routed request.
 */
class SglangCacheAware implements Policy {
  readonly label = 'sglang-cache-aware';
  private readonly index: RoutedIndex;
  private readonly books: Books;
  constructor(
    private readonly ctx: PolicyContext,
    private readonly p = { cacheThreshold: 0.3, balanceAbs: 64, balanceRel: 1.5 },
  ) {
    this.index = new RoutedIndex(ctx.engines.length);
    this.books = new Books(ctx.engines.length);
  }

  route(request: PreparedRequest): Placement {
    const hashes = request.blockHashes(KEY_BLOCK_TOKENS);
    const live = alive(this.ctx);
    const load = this.books.inflight;
    let min = Number.POSITIVE_INFINITY;
    let max = 0;
    for (const e of live) {
      min = Math.min(min, load[e]!);
      max = Math.max(max, load[e]!);
    }
    let pick = live[0] ?? -1;
    if (max - min > this.p.balanceAbs && max > min * this.p.balanceRel) {
      for (const e of live) if (load[e]! < load[pick]!) pick = e;
    } else {
      let bestMatch = -1;
      for (const e of live) {
        const m = this.index.match(e, hashes);
        if (m > bestMatch) {
          bestMatch = m;
          pick = e;
        }
      }
      const ratio = hashes.length === 0 ? 0 : bestMatch / hashes.length;
      if (!(ratio > this.p.cacheThreshold)) {
        pick = live[0] ?? -1;
        for (const e of live) if (this.index.size(e) < this.index.size(pick)) pick = e;
      }
    }
    if (pick < 0) return { engines: [], done: noop };
    this.index.insert(pick, hashes);
    return this.books.place(pick, 0, 0);
  }
}

/**
 * llm-d "sticky until saturated" (llm-d/llm-d guides/optimized-baseline router values; blog
 * 2026-08-04 bottleneck-aware scheduling): keep endpoints whose prefix score is ≥ 0.8, pick
 * the one with the least uncached prefill in flight; stickiness is released (every endpoint
 * eligible) once the sticky choice's in-flight uncached tokens pass τ = peak prefill
 * throughput × maxTTFTPenaltyMs. τ here: the engine model's prefill rate (budget ÷ a full
 * prefill step) × 1,000 ms, an assumption (the guide's τ is for Qwen3-32B on H100).
 */
class LlmdSticky implements Policy {
  readonly label = 'llm-d-sticky';
  private readonly index: RoutedIndex;
  private readonly books: Books;
  constructor(
    private readonly ctx: PolicyContext,
    private readonly threshold = 0.8,
    private readonly penaltyMs = 1000,
  ) {
    this.index = new RoutedIndex(ctx.engines.length);
    this.books = new Books(ctx.engines.length);
  }

  route(request: PreparedRequest): Placement {
    const hashes = request.blockHashes(KEY_BLOCK_TOKENS);
    const P = request.tokens.length;
    const live = alive(this.ctx);
    const pre = this.books.prefillTokens;
    let pick = -1;
    let bestSticky = -1;
    for (const e of live) {
      const score = hashes.length === 0 ? 0 : this.index.match(e, hashes) / hashes.length;
      if (score >= this.threshold && (bestSticky < 0 || pre[e]! < pre[bestSticky]!)) bestSticky = e;
    }
    if (bestSticky >= 0 && pre[bestSticky]! <= this.tau(bestSticky)) pick = bestSticky;
    else for (const e of live) if (pick < 0 || pre[e]! < pre[pick]!) pick = e;
    if (pick < 0) return { engines: [], done: noop };
    const uncached = P - this.index.match(pick, hashes) * KEY_BLOCK_TOKENS;
    this.index.insert(pick, hashes);
    return this.books.place(pick, Math.max(0, uncached), 0);
  }

  private tau(e: number): number {
    const c = this.ctx.engines[e]!.engine.config;
    const fullStepMs = (c.stepOverheadMs + c.maxBatchedTokens * c.prefillMsPerToken) * c.timeScale;
    return (c.maxBatchedTokens / fullStepMs) * this.penaltyMs;
  }
}

/**
 * NVIDIA Dynamo KV router cost (docs/components/router/router-concepts.md, with #12158):
 * cost = prefill_load_scale × max(0, active prefill blocks + new blocks − overlap) + active
 * decode blocks + new blocks, lowest wins (temperature 0), overlap credit 1.0 from the
 * engines' KV events (here the engines' exact cache: events with no lag), load router-side
 * (prefill until the first token, then decode, freed at the end). `lmetric`
 * (ai-dynamo/dynamo#11028, arXiv 2603.15202): new uncached prefill tokens × (batch + 1).
 */
class DynamoCost implements Policy {
  private readonly books: Books;
  constructor(
    readonly label: string,
    private readonly ctx: PolicyContext,
    private readonly lmetric: boolean,
  ) {
    this.books = new Books(ctx.engines.length);
  }

  route(request: PreparedRequest): Placement {
    const P = request.tokens.length;
    let pick = -1;
    let best = Number.POSITIVE_INFINITY;
    let pickUncached = 0;
    let pickBlocks = 0;
    for (const s of this.ctx.engines) {
      if (!s.alive) continue;
      const e = s.index;
      const bs = s.engine.config.blockSize;
      const blocks = Math.ceil(P / bs);
      const overlap = s.engine.kvCache.matchPrefix(request.blockHashes(bs));
      const cost = this.lmetric
        ? (P - overlap * bs) * (this.books.inflight[e]! + 1)
        : Math.max(0, this.books.prefillBlocks[e]! + blocks - overlap) + this.books.decodeBlocks[e]! + blocks;
      if (cost < best) {
        best = cost;
        pick = e;
        pickUncached = P - overlap * bs;
        pickBlocks = blocks;
      }
    }
    if (pick < 0) return { engines: [], done: noop };
    return this.books.place(pick, pickUncached, pickBlocks);
  }
}

function noop(): void {}

export function sglangCacheAware(): Contender {
  return {
    label: 'sglang-cache-aware',
    source: 'SGLang/SMG cache_aware, Rust CLI defaults 0.3 / 64 / 1.5 (sgl-model-gateway/src/policies/cache_aware.rs)',
    create: (ctx) => new SglangCacheAware(ctx),
  };
}

export function llmdSticky(): Contender {
  return {
    label: 'llm-d-sticky',
    source: 'llm-d "sticky until saturated" (guides/optimized-baseline; threshold 0.8, least uncached prefill, τ = prefill rate × 1 s)',
    create: (ctx) => new LlmdSticky(ctx),
  };
}

export function dynamoKvCost(): Contender {
  return {
    label: 'dynamo-kv',
    source: 'Dynamo KV router cost: prefill blocks − overlap + decode blocks (router-concepts.md, #12158), KV events without lag',
    create: (ctx) => new DynamoCost('dynamo-kv', ctx, false),
  };
}

export function lmetric(): Contender {
  return {
    label: 'lmetric',
    source: 'LMetric: uncached prefill tokens × (batch + 1) (arXiv 2603.15202; dynamo#11028), KV events without lag',
    create: (ctx) => new DynamoCost('lmetric', ctx, true),
  };
}
