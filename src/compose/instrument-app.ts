/**
 * The telemetry hook for createRouterApp (src/compose/app.ts `deps.instrument`): builds the app's
 * RouterTelemetry from the scheduler it is given, registers `/metrics` and `/debug/*` on the
 * admin server, hands the edge its EdgeStats, and (with `tracing: 'env'`) starts the
 * OpenTelemetry SDK from the standard OTEL_* variables and shuts it down with the app.
 *
 * The scheduler is read structurally (onDecision, registry, service) so a test double that
 * implements only RoutingService still works, with fewer signals.
 */
import { registerReplicationMetrics } from '../replication/replication-metrics.js';
import { registerPendingResponseMetrics } from '../extproc/pending-responses-metrics.js';
import { readFileSync } from 'node:fs';
import { sendJson } from '../admin/admin-server.js';
import type { AppParts, Instrumentation } from './app-types.js';
import type { Endpoint } from '../core/types.js';
import type { LoadSnapshot } from '../endpoints/load.js';
import type { DataLayer } from '../datalayer/data-layer.js';
import type { EngineBlockGranularity } from '../prefix-cache/engine-block-granularity.js';
import type { PrefixIndex } from '../prefix-cache/prefix-index.js';
import type { DecisionListener } from '../scheduling/decision-events.js';
import { ENGINE_BLOCK_GRANULARITY, PREFIX_INDEX } from '../plugins/multi/prefix-cache-plugin.js';
import type { ServiceKey } from '../framework/plugin-api.js';
import type { ScrapeStatsView } from '../telemetry/metrics.js';
import { RouterTelemetry } from './router-telemetry.js';
import type { PrefixIndexView, TelemetrySources } from './router-telemetry.js';
import { startTracing } from '../telemetry/tracing.js';
import { registerDiscoveryMetrics } from '../discovery/discovery-metrics.js';
import { PRECISE_INDEX_METRICS, registerKvEventMetrics } from '../kv-events/kv-event-metrics.js';
import { TTFT_MODEL_STATS } from '../plugins/multi/ttft-model-plugin.js';
import { registerTtftModelMetrics } from '../telemetry/ttft-model-metrics.js';
import type { Tracing } from '../telemetry/tracing.js';

export interface TelemetryInstrumentOptions {
  /** 'env': start the SDK from OTEL_* (off unless configured); a Tracing: use it; absent: no spans. */
  tracing?: 'env' | Tracing;
  /** Engine poller scrape stats, if the app runs one. */
  scrapes?: ScrapeStatsView;
  version?: string;
  /** Receives the telemetry object (tests, benchmarks). */
  onTelemetry?: (telemetry: RouterTelemetry) => void;
}

/** The scheduler capabilities telemetry uses when present (src/scheduling/scheduler.ts). */
interface ObservableScheduler {
  onDecision?(listener: DecisionListener): () => void;
  registry?: {
    loadOf(endpoint: Endpoint): LoadSnapshot;
    onMembershipChange?(l: (c: { endpoints: readonly Endpoint[] }) => void): () => void;
  };
  service?<T>(key: ServiceKey<T>): T | undefined;
  dataLayer?: DataLayer;
  pluginStates?(): unknown;
}

let cachedVersion: string | undefined;
/** The package version (package.json at the repository / image root). */
export function routerVersion(): string {
  if (cachedVersion === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
      cachedVersion = typeof pkg.version === 'string' ? pkg.version : '0.0.0';
    } catch {
      cachedVersion = '0.0.0';
    }
  }
  return cachedVersion;
}

export function instrumentTelemetry(opts: TelemetryInstrumentOptions = {}): (parts: AppParts) => Instrumentation {
  return (parts) => {
    const s = parts.scheduler as AppParts['scheduler'] & ObservableScheduler;
    const ownTracing = opts.tracing === 'env' ? startTracing({ logger: parts.logger }) : undefined;
    const tracing = ownTracing ?? (opts.tracing === 'env' ? undefined : opts.tracing);
    const registry = s.registry;
    const index = typeof s.service === 'function' ? s.service(PREFIX_INDEX) : undefined;
    const granularity = typeof s.service === 'function' ? s.service(ENGINE_BLOCK_GRANULARITY) : undefined;
    // The data layer's engine-signal store (present when engineMetrics polling is configured).
    const dataLayer = s.dataLayer;
    const store = dataLayer?.store;
    const scrapes = opts.scrapes ?? store;
    const sources: TelemetrySources = {
      endpoints: () => s.endpoints(),
      ...(typeof s.onDecision === 'function' ? { onDecision: (l: DecisionListener) => s.onDecision!(l) } : {}),
      ...(registry ? { loadOf: (e: Endpoint) => registry.loadOf(e) } : {}),
      ...(index ? { indexSize: (e: Endpoint) => indexView(index, granularity, e) } : {}),
      ...(scrapes ? { scrapes } : {}),
    };
    const telemetry = new RouterTelemetry({
      config: parts.config,
      sources,
      logger: parts.logger,
      version: opts.version ?? routerVersion(),
      ...(tracing ? { tracing } : {}),
    });
    telemetry.registerRoutes(parts.admin);
    // Count staleness fallbacks.
    dataLayer?.onFallback((id, reason) => telemetry.metrics.recordSignalFallback(id, reason));
    // Every plugin's state and the data layer's (/debug/plugins).
    if (typeof s.pluginStates === 'function') {
      const states = () => ({ plugins: s.pluginStates!(), ...(dataLayer !== undefined ? { dataLayer: dataLayer.stats() } : {}) });
      parts.admin.addRoute('GET', '/debug/plugins', (_req, res) => sendJson(res, 200, states()));
    }
    const offMembership = registry?.onMembershipChange?.((c) => telemetry.onEndpointsChanged(c.endpoints));
    if (parts.discovery !== undefined) registerDiscoveryMetrics(telemetry.metrics.registry, parts.discovery);
    if (parts.replication !== undefined) registerReplicationMetrics(telemetry.metrics.registry, parts.replication);
    if (parts.pendingResponses !== undefined) registerPendingResponseMetrics(telemetry.metrics.registry, parts.pendingResponses);
    // The precise prefix index's series, when a precise-prefix-cache plugin is configured.
    const precise = typeof s.service === 'function' ? s.service(PRECISE_INDEX_METRICS) : undefined;
    if (precise !== undefined) registerKvEventMetrics(telemetry.metrics.registry, precise);
    // The TTFT model's coefficients and prediction error, when a ttft-model plugin is configured.
    const ttft = typeof s.service === 'function' ? s.service(TTFT_MODEL_STATS) : undefined;
    if (ttft !== undefined) registerTtftModelMetrics(telemetry.metrics.registry, ttft);
    opts.onTelemetry?.(telemetry);
    return {
      edgeStats: telemetry.edgeStats,
      async stop() {
        offMembership?.();
        telemetry.stop();
        await ownTracing?.shutdown();
      },
    };
  };
}

function indexView(index: PrefixIndex, granularity: EngineBlockGranularity | undefined, e: Endpoint): PrefixIndexView {
  const tokens = granularity?.engineBlockTokens(e.index);
  if (granularity === undefined || tokens === undefined) return { blocks: index.size(e.index), capacityBlocks: index.capacity(e.index) };
  const unit = granularity.engineBlockChars(e.index) / granularity.blockChars;
  return {
    blocks: index.size(e.index),
    capacityBlocks: index.capacity(e.index),
    engineBlockTokens: tokens,
    hitUnitBlocks: Math.round(unit * 100) / 100,
  };
}
