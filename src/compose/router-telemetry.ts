/**
 * Wires the observability parts to one router app: metrics, the recent-decisions ring for
 * the explain endpoints and (when tracing is on) decision spans all subscribe to the
 * scheduler's decision events; the edge reports stream health through EdgeStats; the admin
 * server gets `/metrics` and `/debug/*`.
 *
 * Why a subscription rather than calls in the core: the scheduler already emits every
 * decision and outcome (src/scheduling/decision-events.ts), so observability is one listener
 * that can be absent; the decision path itself carries no telemetry code. A listener that
 * throws is contained by the emitter.
 */
import type { AdminServer } from '../admin/admin-server.js';
import type { RouterConfig } from '../config/types.js';
import type { Endpoint, EngineRole } from '../core/types.js';
import type { LoadSnapshot } from '../endpoints/load.js';
import type { EdgeStats } from '../extproc/edge-stats.js';
import type { DecisionListener } from '../scheduling/decision-events.js';
import { registerDebugRoutes } from '../admin/routes-debug.js';
import { registerMetricsRoutes } from '../admin/routes-metrics.js';
import { createDecisionSpanRecorder } from '../telemetry/decision-span.js';
import type { DecisionSpanRecorder } from '../telemetry/decision-span.js';
import type { Logger } from '../logging/logger.js';
import { RouterMetrics } from '../telemetry/metrics.js';
import type { ScrapeStatsLike, ScrapeStatsView } from '../telemetry/metrics.js';
import { ProcessMetrics } from '../telemetry/process-metrics.js';
import { RecentDecisions } from '../telemetry/recent-decisions.js';
import type { Tracing } from '../telemetry/tracing.js';
import { DEFAULT_BLOCK_CHARS } from '../plugins/shared/params.js';

/** What telemetry reads from the scheduler; every part optional (structural, no import of Scheduler). */
/** Prefix-index occupancy of an endpoint; `engineBlockTokens`/`hitUnitBlocks` once the engine reported its KV block. */
export interface PrefixIndexView {
  readonly blocks: number;
  readonly capacityBlocks: number;
  /** The engine's KV block size in tokens (cache_config_info). */
  readonly engineBlockTokens?: number;
  /** Router blocks per counted unit of a predicted hit (1 = the router block). */
  readonly hitUnitBlocks?: number;
}

export interface TelemetrySources {
  /** Current endpoints (the registry), for label bounds and gauges. */
  endpoints(): readonly Endpoint[];
  /** Scheduler.onDecision. */
  onDecision?(listener: DecisionListener): () => void;
  /** EndpointRegistry.loadOf. */
  loadOf?(endpoint: Endpoint): LoadSnapshot;
  /** Prefix-index occupancy of an endpoint, in blocks. */
  indexSize?(endpoint: Endpoint): PrefixIndexView | undefined;
  /** Engine metrics scrape bookkeeping (EngineSignalStore.stats), when polling runs. */
  scrapes?: ScrapeStatsView;
}

export interface RouterTelemetryOptions {
  config: RouterConfig;
  sources: TelemetrySources;
  logger: Logger;
  /** Decision spans are recorded only when given and enabled. */
  tracing?: Tracing;
  version?: string;
}

export interface EndpointExplain {
  readonly id: string;
  readonly pool: string;
  readonly models: readonly string[];
  /** Prefill/decode role (absent = both). */
  readonly role?: EngineRole;
  readonly load?: Record<string, number | boolean | null>;
  readonly engineMetrics?: {
    readonly scrapes: number;
    readonly errors: number;
    readonly ageMs: number | null;
    readonly lastError?: string;
  };
  readonly prefixIndex?: PrefixIndexView;
}

export class RouterTelemetry {
  readonly metrics: RouterMetrics;
  readonly recent: RecentDecisions;
  private readonly spans: DecisionSpanRecorder | undefined;
  private unsubscribe: (() => void) | undefined;
  private scrapes: ScrapeStatsView | undefined;
  private readonly process: ProcessMetrics;
  /** Members by id, for span load attributes (follows membership changes). */
  private readonly byId = new Map<string, Endpoint>();

  constructor(private readonly opts: RouterTelemetryOptions) {
    const { config, sources } = opts;
    this.scrapes = sources.scrapes;
    this.metrics = new RouterMetrics({
      endpointIds: sources.endpoints().map((e) => e.id),
      blockChars: DEFAULT_BLOCK_CHARS,
      charsPerToken: config.requests.charsPerToken,
      ...(opts.version !== undefined ? { version: opts.version } : {}),
      ...(sources.loadOf
        ? { loads: { list: () => sources.endpoints().map((endpoint) => ({ endpoint, load: sources.loadOf!(endpoint) })) } }
        : {}),
      scrapes: { stats: () => this.scrapes?.stats() ?? [] },
    });
    this.process = new ProcessMetrics([this.metrics.registry]);
    this.process.start();
    this.recent = new RecentDecisions(config.telemetry.recentDecisions);
    if (opts.tracing?.enabled) {
      const byId = this.byId;
      for (const e of sources.endpoints()) byId.set(e.id, e);
      this.spans = createDecisionSpanRecorder({
        tracer: opts.tracing.tracer,
        ...(sources.loadOf
          ? {
              loadOf: (id: string) => {
                const e = byId.get(id);
                return e ? sources.loadOf!(e) : undefined;
              },
            }
          : {}),
      });
    }
    if (sources.onDecision) {
      this.unsubscribe = sources.onDecision(this.listener);
    } else {
      opts.logger.warn('scheduler offers no decision events: decision metrics, spans and explain are off');
    }
  }

  /** Membership changed: metrics and spans follow the new member set. */
  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.metrics.addEndpoints(endpoints.map((e) => e.id));
    this.byId.clear();
    for (const e of endpoints) this.byId.set(e.id, e);
  }

  /** The edge's stream observer. */
  get edgeStats(): EdgeStats {
    return this.metrics;
  }

  /** Late binding of the engine poller's scrape stats (created after telemetry). */
  bindScrapes(scrapes: ScrapeStatsView): void {
    this.scrapes = scrapes;
  }

  private readonly listener: DecisionListener = (event) => {
    switch (event.kind) {
      case 'routed':
        this.metrics.recordDecision(event.request, event.decision);
        this.recent.record(event.request, event.decision);
        this.spans?.record(event.request, event.decision, event.timings);
        return;
      case 'finished':
        this.metrics.recordOutcome(event.request, event.decision, event.outcome);
        this.recent.recordOutcome(event.request.requestId, event.outcome);
        return;
      case 'rejected':
        return; // the edge reports rejections (streamError with the RouterError code)
    }
  };

  /** `GET /debug/endpoints` body: what the router believes about each endpoint right now. */
  explainEndpoints(): { strategy: string; endpoints: EndpointExplain[] } {
    const { sources, config } = this.opts;
    const scrapeById = new Map<string, ScrapeStatsLike & { lastError?: string }>();
    for (const s of this.scrapes?.stats() ?? []) scrapeById.set(s.endpointId, s);
    const endpoints = sources.endpoints().map((e): EndpointExplain => {
      const out: { -readonly [K in keyof EndpointExplain]: EndpointExplain[K] } = { id: e.id, pool: e.pool, models: e.models };
      if (e.role !== undefined) out.role = e.role;
      if (sources.loadOf) out.load = loadJson(sources.loadOf(e));
      const s = scrapeById.get(e.id);
      if (s) {
        out.engineMetrics = {
          scrapes: s.scrapes,
          errors: s.errors,
          ageMs: Number.isFinite(s.ageMs) ? Math.round(s.ageMs) : null,
          ...(s.lastError !== undefined ? { lastError: s.lastError } : {}),
        };
      }
      const idx = sources.indexSize?.(e);
      if (idx) out.prefixIndex = idx;
      return out;
    });
    return { strategy: config.strategy, endpoints };
  }

  registerRoutes(admin: AdminServer): void {
    registerMetricsRoutes(admin, this.metrics);
    registerDebugRoutes(admin, { recent: this.recent, endpoints: () => this.explainEndpoints() });
  }

  /** Unsubscribes from the scheduler and stops the event-loop sampler. Idempotent. */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.process.stop();
  }
}

function loadJson(l: LoadSnapshot): Record<string, number | boolean | null> {
  const out: Record<string, number | boolean | null> = {
    inflightRequests: l.inflightRequests,
    inflightPromptTokens: l.inflightPromptTokens,
    pendingTokens: l.pendingTokens,
    metricsAgeMs: Number.isFinite(l.metricsAgeMs) ? Math.round(l.metricsAgeMs) : null,
    healthy: l.healthy,
  };
  if (l.waiting !== undefined) out['waiting'] = l.waiting;
  if (l.running !== undefined) out['running'] = l.running;
  if (l.kvUsage !== undefined) out['kvUsage'] = l.kvUsage;
  return out;
}
