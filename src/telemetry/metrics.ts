/**
 * The router's core Prometheus series (decisions, decision latency, predicted vs engine-
 * reported prefix hits, in-flight and engine-signal gauges, edge stream health), defined in
 * one place (name, help, unit, labels, buckets) on a registry owned by one app instance,
 * never prom-client's global default, so two apps in one process (tests) do not mix. Other
 * subsystems register their own series on the same registry next to their code (discovery,
 * replication, KV events, pending responses, process, TTFT model: see
 * src/compose/instrument-app.ts).
 *
 * Why these series: they answer "where did requests go and why" (decisions by strategy,
 * endpoint and reason), "is deciding cheap" (decision latency), "does the cache model match
 * reality" (predicted prefix hits vs the cached tokens engines report), and "what does the
 * router believe about load right now" (in-flight gauges, engine signal ages, scrape
 * errors), plus edge stream health.
 *
 * Bounded labels: `endpoint` is only ever a configured endpoint address (anything else is
 * `other`), `reason` is the closed DecisionReason set, `strategy` is a configured strategy
 * name (capped), `kind` is the edge's closed StreamErrorKind set. No prompt text anywhere.
 *
 * Cost on the request path: the per-decision and per-stream series are counted into plain
 * numbers (deferred-counter.ts, hot-path-histogram.ts) and reach prom-client when a scrape
 * collects the registry, so recording a decision does no label hashing.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { DECISION_REASONS, DISAGG_REASONS } from '../core/types.js';
import type { Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../core/types.js';
import type { LoadSnapshot } from '../endpoints/load.js';
import type { EdgeStats } from '../extproc/edge-stats.js';
import { FALLBACK_REASONS } from '../endpoints/staleness.js';
import { DeferredCounter } from './deferred-counter.js';
import { HotPathHistogram } from '../util/hot-path-histogram.js';

/** Decision latency buckets in seconds: 10 µs … 100 ms. */
export const DECISION_LATENCY_BUCKETS = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
] as const;

export const OTHER_LABEL = 'other';
const MAX_STRATEGY_LABELS = 16;
/** Endpoint label values kept at most (engines that joined later count too; beyond: `other`). */
const MAX_ENDPOINT_LABELS = 1024;
const REASONS: ReadonlySet<string> = new Set(DECISION_REASONS);
const PD_REASONS: ReadonlySet<string> = new Set(DISAGG_REASONS);
const FALLBACKS: ReadonlySet<string> = new Set(FALLBACK_REASONS);

/**
 * `kind` label values of cacheroute_extproc_stream_errors_total: the edge's StreamErrorKind
 * (src/extproc/edge-stats.ts: a RouterError code, ABORTED, TRANSPORT or IDLE), lower-cased.
 */
export const STREAM_ERROR_KINDS = [
  'bad_request',
  'payload_too_large',
  'unsupported_media',
  'no_endpoint',
  'overloaded',
  'bad_config',
  'protocol',
  'internal',
  'aborted',
  'transport',
  'idle',
] as const;

/** Current endpoints with their load picture (the scheduler's registry, adapted). */
export interface EndpointLoadView {
  list(): readonly { readonly endpoint: Endpoint; readonly load: LoadSnapshot }[];
}

/** Engine scrape bookkeeping (src/endpoints/engine-metrics-store.ts `ScrapeStats`, structurally). */
export interface ScrapeStatsLike {
  readonly endpointId: string;
  readonly scrapes: number;
  readonly errors: number;
  /** ms; Infinity if never scraped successfully. */
  readonly ageMs: number;
}
export interface ScrapeStatsView {
  stats(): readonly ScrapeStatsLike[];
}

export interface RouterMetricsOptions {
  /** Configured endpoint addresses (`ip:port`): the only values the `endpoint` label takes. */
  endpointIds: Iterable<string>;
  /** Chars/token turns matched chars into predicted tokens; the block size (chars) serves decisions that report no matched chars. */
  blockChars: number;
  charsPerToken: number;
  loads?: EndpointLoadView;
  scrapes?: ScrapeStatsView;
  /** Value of the `version` label of cacheroute_build_info. */
  version?: string;
}

export class RouterMetrics implements EdgeStats {
  readonly registry = new Registry();
  private readonly endpointIds: Set<string>;
  private readonly strategies = new Set<string>();
  private readonly tokensPerBlock: number;
  private readonly charsPerToken: number;
  private loads: EndpointLoadView | undefined;
  private scrapes: ScrapeStatsView | undefined;
  private readonly lastScrapeCounts = new Map<string, { scrapes: number; errors: number }>();

  private readonly decisions: DeferredCounter<'strategy' | 'endpoint' | 'reason'>;
  private readonly decisionSeconds: HotPathHistogram<'strategy'>;
  private readonly profileDecisions: DeferredCounter<'strategy' | 'profile'>;
  private readonly pdDecisions: DeferredCounter<'decode' | 'prefill' | 'why'>;
  private readonly predictedBlocks: DeferredCounter<'endpoint'>;
  private readonly predictedTokens: DeferredCounter<'endpoint'>;
  private readonly promptBlocks: DeferredCounter<'endpoint'>;
  private readonly engineCached: DeferredCounter<'endpoint'>;
  private readonly enginePrompt: DeferredCounter<'endpoint'>;
  private readonly completed: DeferredCounter<'endpoint' | 'outcome'>;
  private readonly signalFallbacks: DeferredCounter<'endpoint' | 'reason'>;
  private readonly streamErrors: Counter<'kind'>;
  /** Streams opened since the last scrape, and open now (read by the collect hooks). */
  private streamsOpenedPending = 0;
  private connectionsRetiredPending = 0;
  private streamsOpen = 0;

  constructor(opts: RouterMetricsOptions) {
    this.endpointIds = new Set(opts.endpointIds);
    this.tokensPerBlock = opts.charsPerToken > 0 ? opts.blockChars / opts.charsPerToken : 0;
    this.charsPerToken = opts.charsPerToken;
    this.loads = opts.loads;
    this.scrapes = opts.scrapes;
    const registers = [this.registry];
    const self = this;

    new Gauge({
      name: 'cacheroute_build_info',
      help: 'Always 1; labels carry the router version.',
      labelNames: ['version'],
      registers,
    }).set({ version: opts.version ?? '0.0.0' }, 1);

    this.decisions = new DeferredCounter({
      name: 'cacheroute_decisions_total',
      help: 'Routing decisions, by strategy, chosen endpoint and reason.',
      labelNames: ['strategy', 'endpoint', 'reason'],
      registers,
    });
    this.profileDecisions = new DeferredCounter({
      name: 'cacheroute_profile_decisions_total',
      help: 'Routing decisions by the scheduling profile the profile handler chose (e.g. the auto modes).',
      labelNames: ['strategy', 'profile'],
      registers,
    });
    this.pdDecisions = new DeferredCounter({
      name: 'cacheroute_pd_decisions_total',
      help: 'Prefill/decode decisions of a disaggregation handler, by decode engine, prefill engine ("none" when not split) and why prefill was or was not split off.',
      labelNames: ['decode', 'prefill', 'why'],
      registers,
    });
    this.decisionSeconds = new HotPathHistogram(
      'cacheroute_decision_duration_seconds',
      'Time spent choosing an endpoint (scheduler only, not the ext_proc round trip).',
      'strategy',
      DECISION_LATENCY_BUCKETS,
      registers,
    );
    this.predictedBlocks = new DeferredCounter({
      name: 'cacheroute_prefix_predicted_hit_blocks_total',
      help: 'Prefix blocks the router predicted the serving endpoint held, for finished requests whose engine reported cached tokens.',
      labelNames: ['endpoint'],
      registers,
    });
    this.promptBlocks = new DeferredCounter({
      name: 'cacheroute_prefix_blocks_total',
      help: 'Prefix blocks considered for matching, for the same requests as cacheroute_prefix_predicted_hit_blocks_total.',
      labelNames: ['endpoint'],
      registers,
    });
    this.predictedTokens = new DeferredCounter({
      name: 'cacheroute_prefix_predicted_hit_tokens_total',
      help: 'Prompt tokens the router predicted would hit the serving endpoint prefix cache (matched blocks x tokens per block, capped by the prompt estimate), same requests as cacheroute_engine_cached_tokens_total.',
      labelNames: ['endpoint'],
      registers,
    });
    this.engineCached = new DeferredCounter({
      name: 'cacheroute_engine_cached_tokens_total',
      help: 'Prompt tokens the engine reported as served from its prefix cache (usage.prompt_tokens_details.cached_tokens).',
      labelNames: ['endpoint'],
      registers,
    });
    this.enginePrompt = new DeferredCounter({
      name: 'cacheroute_engine_prompt_tokens_total',
      help: 'Prompt tokens the engine reported (usage.prompt_tokens), for requests that reported cached tokens.',
      labelNames: ['endpoint'],
      registers,
    });
    this.completed = new DeferredCounter({
      name: 'cacheroute_requests_completed_total',
      help: 'Routed requests that finished, by serving endpoint and outcome (success: 2xx/3xx, error: other status or none, aborted).',
      labelNames: ['endpoint', 'outcome'],
      registers,
    });

    new Gauge({
      name: 'cacheroute_endpoint_inflight_requests',
      help: 'Requests the router sent to the endpoint that have not finished (router-side accounting).',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const { endpoint, load } of self.loadList()) this.set({ endpoint: endpoint.id }, load.inflightRequests);
      },
    });
    new Gauge({
      name: 'cacheroute_endpoint_inflight_prompt_tokens',
      help: 'Estimated prompt tokens of the requests in flight on the endpoint (router-side accounting).',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const { endpoint, load } of self.loadList()) this.set({ endpoint: endpoint.id }, load.inflightPromptTokens);
      },
    });
    new Gauge({
      name: 'cacheroute_endpoint_healthy',
      help: '1 when the endpoint may receive traffic, 0 when health/scrapes marked it unhealthy.',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const { endpoint, load } of self.loadList()) this.set({ endpoint: endpoint.id }, load.healthy ? 1 : 0);
      },
    });
    new Gauge({
      name: 'cacheroute_engine_signal_age_seconds',
      help: 'Age of the last successful engine metrics scrape; +Inf if never scraped.',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const s of self.scrapeList()) this.set({ endpoint: s.endpointId }, s.ageMs / 1000);
      },
    });
    new Counter({
      name: 'cacheroute_engine_scrapes_total',
      help: 'Engine metrics scrapes attempted.',
      labelNames: ['endpoint'],
      registers,
      collect() {
        self.syncScrapeCounters(this, 'scrapes');
      },
    });
    new Counter({
      name: 'cacheroute_engine_scrape_errors_total',
      help: 'Engine metrics scrapes that failed (connect error, timeout, bad status, unparsable).',
      labelNames: ['endpoint'],
      registers,
      collect() {
        self.syncScrapeCounters(this, 'errors');
      },
    });

    this.signalFallbacks = new DeferredCounter({
      name: 'cacheroute_engine_signal_fallbacks_total',
      help: 'Times a decision ignored an endpoint engine signals and used router-side accounting only, by reason (missing: never scraped, age: older than staleAfterMs, frozen: values stopped moving while requests completed).',
      labelNames: ['endpoint', 'reason'],
      registers,
    });

    new Counter({
      name: 'cacheroute_extproc_streams_total',
      help: 'ext_proc gRPC streams opened by Envoy (one per HTTP request).',
      registers,
      collect() {
        this.inc(self.streamsOpenedPending);
        self.streamsOpenedPending = 0;
      },
    });
    new Gauge({
      name: 'cacheroute_extproc_streams_active',
      help: 'ext_proc gRPC streams currently open.',
      registers,
      collect() {
        this.set(self.streamsOpen);
      },
    });
    new Counter({
      name: 'cacheroute_extproc_connections_retired_total',
      help: "Envoy connections the ext_proc server retired (graceful GOAWAY) before Node's HTTP/2 reset limit; non-zero when Envoy resets ext_proc streams (ext_proc_graceful_grpc_close off).",
      registers,
      collect() {
        this.inc(self.connectionsRetiredPending);
        self.connectionsRetiredPending = 0;
      },
    });
    this.streamErrors = new Counter({
      name: 'cacheroute_extproc_stream_errors_total',
      help: 'ext_proc stream errors, by kind.',
      labelNames: ['kind'],
      registers,
    });

    // Pre-create the closed label sets so dashboards see zeros rather than gaps.
    for (const kind of STREAM_ERROR_KINDS) this.streamErrors.inc({ kind }, 0);
  }

  /** Late binding for sources created after the metrics (e.g. the poller). */
  bindSources(sources: { loads?: EndpointLoadView; scrapes?: ScrapeStatsView }): void {
    if (sources.loads) this.loads = sources.loads;
    if (sources.scrapes) this.scrapes = sources.scrapes;
  }

  /** Engines that joined at run time get their own label values (up to a bound). */
  addEndpoints(ids: Iterable<string>): void {
    for (const id of ids) {
      if (this.endpointIds.size >= MAX_ENDPOINT_LABELS) return;
      this.endpointIds.add(id);
    }
  }

  endpointLabel(id: string): string {
    return this.endpointIds.has(id) ? id : OTHER_LABEL;
  }

  strategyLabel(strategy: string): string {
    if (this.strategies.has(strategy)) return strategy;
    if (this.strategies.size >= MAX_STRATEGY_LABELS || !/^[A-Za-z0-9_./-]{1,64}$/.test(strategy)) return OTHER_LABEL;
    this.strategies.add(strategy);
    return strategy;
  }

  /**
   * Predicted cache-hit tokens for a decision (capped by the prompt estimate): the matched
   * characters the deciding plugin reported (its own block size, whatever graph it runs in)
   * over chars/token; only a decision without them falls back to blocks × the configured
   * block size.
   */
  predictedHitTokens(request: RouteRequest, decision: RouteDecision): number {
    const raw =
      decision.matchedChars !== undefined && this.charsPerToken > 0
        ? Math.round(decision.matchedChars / this.charsPerToken)
        : Math.round(decision.matchedBlocks * this.tokensPerBlock);
    return Math.max(0, Math.min(request.promptTokens, raw));
  }

  recordDecision(_request: RouteRequest, decision: RouteDecision): void {
    const strategy = this.strategyLabel(decision.strategy);
    const reason = REASONS.has(decision.reason) ? decision.reason : OTHER_LABEL;
    this.decisions.cell3(strategy, this.endpointLabel(decision.endpoint.id), reason).pending++;
    this.profileDecisions.cell2(strategy, this.strategyLabel(decision.profile ?? decision.strategy)).pending++;
    this.decisionSeconds.observe(this.decisionSeconds.cell(strategy), Math.max(0, decision.decisionMicros) / 1e6);
    const pd = decision.disagg;
    if (pd !== undefined) {
      const prefill = pd.prefill !== undefined ? this.endpointLabel(pd.prefill.id) : 'none';
      this.pdDecisions.cell3(this.endpointLabel(decision.endpoint.id), prefill, PD_REASONS.has(pd.why) ? pd.why : OTHER_LABEL).pending++;
    }
  }

  recordOutcome(request: RouteRequest, decision: RouteDecision, outcome: RequestOutcome): void {
    const servedBy = outcome.servedBy ?? decision.endpoint.id;
    const endpoint = this.endpointLabel(servedBy);
    const result = outcome.aborted
      ? 'aborted'
      : outcome.status !== undefined && outcome.status >= 200 && outcome.status < 400
        ? 'success'
        : 'error';
    this.completed.cell2(endpoint, result).pending++;
    if (outcome.cachedTokens === undefined) return;
    // The prediction was about the chosen endpoint; if a retry moved the request, the
    // serving endpoint was predicted to hold nothing.
    const samePlace = servedBy === decision.endpoint.id;
    this.predictedBlocks.cell1(endpoint).pending += samePlace ? decision.matchedBlocks : 0;
    this.promptBlocks.cell1(endpoint).pending += decision.totalBlocks;
    this.predictedTokens.cell1(endpoint).pending += samePlace ? this.predictedHitTokens(request, decision) : 0;
    this.engineCached.cell1(endpoint).pending += Math.max(0, outcome.cachedTokens);
    if (outcome.promptTokens !== undefined) this.enginePrompt.cell1(endpoint).pending += Math.max(0, outcome.promptTokens);
  }

  /** Staleness rules fell back to router accounting for an endpoint (src/endpoints/staleness.ts). */
  recordSignalFallback(endpointId: string, reason: string): void {
    this.signalFallbacks.cell2(this.endpointLabel(endpointId), FALLBACKS.has(reason) ? reason : OTHER_LABEL).pending++;
  }

  // EdgeStats
  streamOpened(): void {
    this.streamsOpenedPending++;
    this.streamsOpen++;
  }
  streamClosed(): void {
    this.streamsOpen--;
  }
  connectionRetired(): void {
    this.connectionsRetiredPending++;
  }
  streamError(kind: string): void {
    const label = kind.toLowerCase();
    this.streamErrors.inc({ kind: (STREAM_ERROR_KINDS as readonly string[]).includes(label) ? label : OTHER_LABEL });
  }

  /** Prometheus text exposition of this app's registry. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private loadList(): readonly { readonly endpoint: Endpoint; readonly load: LoadSnapshot }[] {
    return (this.loads?.list() ?? []).filter((e) => this.endpointIds.has(e.endpoint.id));
  }

  private scrapeList(): readonly ScrapeStatsLike[] {
    return (this.scrapes?.stats() ?? []).filter((s) => this.endpointIds.has(s.endpointId));
  }

  /** Mirrors cumulative counts from the poller into a Prometheus counter (by deltas). */
  private syncScrapeCounters(counter: Counter<'endpoint'>, field: 'scrapes' | 'errors'): void {
    for (const s of this.scrapeList()) {
      const last = this.lastScrapeCounts.get(s.endpointId) ?? { scrapes: 0, errors: 0 };
      const delta = s[field] - last[field];
      if (delta > 0) counter.inc({ endpoint: s.endpointId }, delta);
      else counter.inc({ endpoint: s.endpointId }, 0);
      this.lastScrapeCounts.set(s.endpointId, { ...last, [field]: s[field] });
    }
  }
}
