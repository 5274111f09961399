/**
 * What a decision benchmark needs to run the router as `cacheroute serve` runs it: the config
 * parsed from a document that names only the endpoints (every default as shipped, engine
 * metrics on), and scraped engine numbers for every endpoint, so the data layer's staleness
 * merge, the load scorers and the index calibration work on real samples instead of the
 * "no sample" fallback.
 *
 * Why a seeded random walk: the cost of a decision does not depend on which engine is busy,
 * but it does on every endpoint having a fresh sample with varying numbers (each merge then
 * takes the full path and ties are rare, as on a loaded fleet). Each tick re-scrapes a slice
 * of the fleet, so every endpoint is refreshed once per `refreshEvery` decisions, as a poller
 * spreads its scrapes over the interval.
 */
import { API_VERSION } from '../../src/config/defaults.js';
import { parseConfig } from '../../src/config/parse-config.js';
import type { RouterConfig, StrategyName } from '../../src/config/types.js';
import type { Scheduler } from '../../src/scheduling/scheduler.js';
import { type Rng, seededRng } from '../../src/util/rng.js';

/** The `cacheroute serve` config for `endpoints` endpoints (addresses 10.1.x.y:8000). */
export function serveDocumentConfig(o: {
  readonly endpoints: number;
  readonly seed: number;
  readonly strategy?: StrategyName;
}): RouterConfig {
  return parseConfig({
    apiVersion: API_VERSION,
    server: { grpcAddress: '127.0.0.1:0', adminAddress: '127.0.0.1:0', warmUpStreams: 0 },
    seed: o.seed,
    telemetry: { logLevel: 'warn' },
    ...(o.strategy !== undefined ? { strategy: o.strategy } : {}),
    endpoints: Array.from({ length: o.endpoints }, (_, i) => ({ address: `10.1.${i >> 8}.${i & 255}:8000` })),
  });
}

interface EngineState {
  waiting: number;
  running: number;
  kvUsage: number;
  hits: number;
  queries: number;
}

/** Feeds every endpoint's scraped numbers into the scheduler's signal store. */
export class EngineSamples {
  private readonly ids: readonly string[];
  private readonly states: EngineState[];
  private readonly rng: Rng;
  private next = 0;
  private readonly perTick: number;

  constructor(
    private readonly scheduler: Scheduler,
    config: RouterConfig,
    seed: number,
    refreshEvery = 50,
    /** The engines' KV cache: blocks of 16 tokens (gpu-like profile). */
    private readonly numBlocks = 8192,
  ) {
    if (scheduler.dataLayer?.store === undefined || !config.engineMetrics.enabled) throw new Error('engine samples need engine metrics on');
    this.ids = scheduler.registry.all().map((e) => e.id);
    this.rng = seededRng(seed * 7 + 1);
    this.states = this.ids.map(() => ({ waiting: 0, running: 1 + this.rng.int(16), kvUsage: this.rng.next() * 0.8, hits: 0, queries: 0 }));
    this.perTick = Math.max(1, Math.ceil(this.ids.length / Math.max(1, refreshEvery)));
    for (let i = 0; i < this.ids.length; i++) this.scrape(i);
  }

  /** Re-scrapes the next slice of the fleet. */
  tick(): void {
    for (let k = 0; k < this.perTick; k++) {
      this.scrape(this.next);
      this.next = (this.next + 1) % this.ids.length;
    }
  }

  private scrape(i: number): void {
    const st = this.states[i]!;
    const r = this.rng;
    st.running = Math.max(0, Math.min(64, st.running + r.int(5) - 2));
    st.waiting = Math.max(0, Math.min(32, st.waiting + r.int(3) - 1));
    st.kvUsage = Math.max(0, Math.min(1, st.kvUsage + (r.next() - 0.5) * 0.1));
    const q = 1 + r.int(20_000);
    st.queries += q;
    st.hits += Math.floor(q * r.next());
    this.scheduler.dataLayer!.store!.recordSuccess(
      this.ids[i]!,
      {
        engine: 'vllm',
        waiting: st.waiting,
        running: st.running,
        kvUsage: st.kvUsage,
        prefixCacheHits: st.hits,
        prefixCacheQueries: st.queries,
        blockSizeTokens: 16,
        numBlocks: this.numBlocks,
      },
      2,
    );
  }
}
