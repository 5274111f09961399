/**
 * Composition root: turns a validated RouterConfig into a running router —
 * scheduler (strategies, endpoint registry, load signals) → ext_proc edge (gRPC server
 * Envoy calls) → admin HTTP server (health, readiness, routes others register).
 * Everything with a lifecycle is started here in dependency order and stopped in reverse.
 * Tests build apps in-process on port 0 with fakes injected through `deps`.
 */
import type { RouterConfig } from '../config/types.js';
import { createScheduler } from './create-scheduler.js';
import { extractPrompt } from '../request/extract-prompt.js';
import { AdminServer, sendJson } from '../admin/admin-server.js';
import { ExtProcServer } from '../extproc/ext-proc-server.js';
import { EdgeContext } from '../extproc/edge-context.js';
import { AccessLogCompletion, ResponsePathCompletion } from '../extproc/completion-mode.js';
import { AccessLogReceiver } from '../extproc/access-log-receiver.js';
import { ACCESS_LOG_WAIT_MS, PendingResponses } from '../extproc/pending-responses.js';
import type { PromptExtractor } from '../extproc/request-mapping.js';
import type { EdgeStats } from '../extproc/edge-stats.js';
import { noopEdgeStats } from '../extproc/edge-stats.js';
import type { BodySendMode } from '../extproc/ext-proc-proto.js';
import { systemClock } from '../util/clock.js';
import type { Clock } from '../util/clock.js';
import { seededRng } from '../util/rng.js';
import type { Rng } from '../util/rng.js';
import { createLogger, silentLogger } from '../logging/logger.js';
import type { Logger } from '../logging/logger.js';
import { instrumentTelemetry } from './instrument-app.js';
import { attachEngineHealth, isHealthHost, type AttachedHealth } from '../health/attach-engine-health.js';
import { AdmissionController } from '../admission/admission-controller.js';
import { FleetSaturation } from '../admission/saturation.js';
import { changedSections, RELOADABLE_SECTIONS, ReloadCounts, type ReloadOutcome } from './config-reloader.js';
import { DEFAULT_POOL } from '../endpoints/endpoint-config.js';
import { DEFAULT_DISCOVERY } from '../discovery/discovery-config.js';
import type { DiscoveryView } from '../discovery/discovery-metrics.js';
import { DiscoveryService, type DiscoveryDeps, type DiscoveryInput } from '../discovery/discovery-service.js';
import type { SourceStatus } from '../discovery/endpoint-source.js';
import { PeerLoadTable } from '../replication/peer-load.js';
import { defaultReplicaId, ReplicationService } from '../replication/replication-service.js';
import { ownerTagOf } from '../replication/completion-forwarding.js';
import { registerReplicationRoutes } from '../replication/replication-routes.js';
import { PREFIX_INDEX } from '../plugins/multi/prefix-cache-plugin.js';
import { PREFIX_INDEX_REPLICA } from '../plugins/multi/prefix-index-replica.js';
import { TTFT_MODEL_STATS } from '../plugins/multi/ttft-model-plugin.js';
import { formatHostPort } from '../util/host-port.js';
import { warmUpRequestPath } from './warm-up.js';
import type { AppParts, AppScheduler, Instrumentation } from './app-types.js';
import { createTrafficTrace } from './traffic-trace.js';

/** Longest the warm-up may delay serving (it stops early, never fails the start). */
const WARM_UP_BUDGET_MS = 5000;

export type { AppParts, AppScheduler, Instrumentation } from './app-types.js';

export interface RouterAppDeps {
  readonly clock?: Clock;
  /** Default: seeded from `config.seed`. */
  readonly rng?: Rng;
  readonly logger?: Logger;
  /** Default: src/request/extract-prompt.ts. */
  readonly extract?: PromptExtractor;
  /** Replaces the scheduler built from config (tests). */
  readonly scheduler?: AppScheduler;
  /** Stream lifecycle/error observer; overrides the instrumentation's one. */
  readonly edgeStats?: EdgeStats;
  /**
   * Telemetry wiring; called once, before start, with the built parts. Default:
   * instrumentTelemetry({ tracing: 'env' }) (metrics, /metrics and /debug/* routes, edge
   * stats; spans only when OTEL_* configures an exporter). `() => ({})` turns it off.
   */
  readonly instrument?: (parts: AppParts) => Instrumentation;
  /** Body mode assumed when Envoy sends no protocol_config (default FULL_DUPLEX_STREAMED). */
  readonly assumedBodyMode?: BodySendMode;
  /** Name resolution / Kubernetes client for discovery (tests); defaults from config. */
  readonly discovery?: Pick<DiscoveryDeps, 'resolver' | 'kubeConfig'>;
}

export interface StartedAddresses {
  readonly grpcPort: number;
  readonly adminPort: number;
  /** `host:port` strings as bound. */
  readonly grpcAddress: string;
  readonly adminAddress: string;
}

export interface RouterApp {
  /** The running config (after reloads: their reloadable sections). */
  readonly config: RouterConfig;
  readonly scheduler: AppScheduler;
  readonly admin: AdminServer;
  readonly extProc: ExtProcServer;
  readonly logger: Logger;
  /** Engine health (undefined when `health.enabled` is false or the scheduler is a test double). */
  readonly health?: AttachedHealth;
  /** Admission control (undefined when `admission.mode` is off). */
  readonly admission?: AdmissionController;
  /** State sharing with the other replicas (undefined when `replication.enabled` is false). */
  readonly replication?: ReplicationService;
  /** The ext_proc edge (open streams, idle expiry). */
  readonly edge: EdgeContext;
  start(): Promise<StartedAddresses>;
  /**
   * Applies a reloaded, validated config: `endpoints` and `discovery` take effect at once
   * (engines join and leave without a restart); other changed sections are reported as
   * needing a restart and keep their running values.
   */
  reload(next: RouterConfig): Promise<ReloadOutcome>;
  /** Reload counts by result (the config reloader records them; metrics read them). */
  readonly reloads: ReloadCounts;
  /** Endpoint sources and their state (empty when the app runs no discovery). */
  discoveryStatus(): readonly SourceStatus[];
  /**
   * Readiness off, then drain the ext_proc server (open streams get `graceMs`, default
   * config.server.drainTimeoutMs), then stop the scheduler, telemetry and admin server.
   */
  stop(opts?: { graceMs?: number }): Promise<void>;
}

type AppState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

export function createRouterApp(config: RouterConfig, deps: RouterAppDeps = {}): RouterApp {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? createLogger({ level: config.telemetry.logLevel });
  const rng = deps.rng ?? seededRng(config.seed);
  // Other replicas' load joins the data layer's load sources (only for a scheduler built here).
  const peers =
    config.replication.enabled && deps.scheduler === undefined ? new PeerLoadTable(config.replication.load.peerTimeoutMs) : undefined;
  const built =
    deps.scheduler === undefined
      ? createScheduler(config, { clock, rng, logger, ...(peers !== undefined ? { fleetLoadSources: [peers] } : {}) })
      : undefined;
  const scheduler: AppScheduler = deps.scheduler ?? built!;
  const replicaIndex = built?.service(PREFIX_INDEX_REPLICA);
  const tokenLoad = built?.dataLayer?.tokenLoad;
  // Access-log completion: tickets are held here until Envoy's access log (or, with
  // replication, another replica forwarding it) reports the request's end. With replication
  // every key names this replica (its owner tag), so the others can forward to it.
  const replicaId = peers !== undefined ? config.replication.replicaId || defaultReplicaId() : undefined;
  let edgeStatsLate: EdgeStats | undefined;
  const pending =
    config.server.responseCompletion === 'access-log'
      ? new PendingResponses({
          clock,
          maxAgeMs: config.server.responseIdleTimeoutMs,
          // Detect a gateway that sends no access log (completion-mode.ts).
          logWaitMs: Math.min(ACCESS_LOG_WAIT_MS, config.server.responseIdleTimeoutMs),
          ...(replicaId !== undefined ? { owner: ownerTagOf(replicaId), orphanAgeMs: config.replication.completions.orphanAgeMs } : {}),
          // The edge's stats sink comes from the instrumentation, which needs this object first.
          stats: { ...noopEdgeStats, streamError: (kind: string) => edgeStatsLate?.streamError(kind) },
        })
      : undefined;
  const replication =
    built !== undefined && peers !== undefined
      ? new ReplicationService(
          { ...config.replication, replicaId: replicaId! },
          {
            registry: built.registry,
            peers,
            clock,
            logger,
            ...(tokenLoad !== undefined ? { tokenLoad } : {}),
            ...(replicaIndex !== undefined ? { index: replicaIndex } : {}),
            ...(pending !== undefined ? { tickets: pending } : {}),
          },
        )
      : undefined;
  const admin = new AdminServer({ address: config.server.adminAddress, logger });
  const reloads = new ReloadCounts();
  let running = config;
  // Discovery keeps the registry of a scheduler built here from config (a test double's is its own).
  const discovery =
    deps.scheduler === undefined && scheduler.registry !== undefined
      ? new DiscoveryService(discoveryInput(config), {
          registry: scheduler.registry,
          log: logger.child({ component: 'discovery' }),
          ...deps.discovery,
        })
      : undefined;
  if (discovery !== undefined) {
    admin.addRoute('GET', '/debug/discovery', (_req, res) =>
      sendJson(res, 200, { sources: discovery.status(), reloads: reloads.snapshot() }),
    );
  }
  const discoveryView: DiscoveryView | undefined =
    discovery !== undefined ? { status: () => discovery.status(), reloads: () => reloads.snapshot() } : undefined;
  // Default telemetry: metrics, /debug/*, decision spans when OTEL_* configures an exporter.
  const instrument = deps.instrument ?? instrumentTelemetry({ tracing: 'env' });
  const instrumentation: Instrumentation = instrument({
    config,
    scheduler,
    admin,
    clock,
    logger,
    ...(discoveryView !== undefined ? { discovery: discoveryView } : {}),
    ...(replication !== undefined ? { replication } : {}),
    ...(pending !== undefined
      ? { pendingResponses: { snapshot: () => pending.snapshot(), lossy: () => pending.lossy, accessLog: () => accessLog?.snapshot() } }
      : {}),
  });
  const routing = instrumentation.routing ?? scheduler;
  const edgeStats = deps.edgeStats ?? instrumentation.edgeStats;
  edgeStatsLate = edgeStats;
  // Opt-in traffic trace (trafficTrace.path): listens to the decisions of a scheduler built here.
  const trafficTrace = built !== undefined ? createTrafficTrace(config, { logger }) : undefined;
  const host = isHealthHost(scheduler) ? scheduler : undefined;
  const health =
    host !== undefined
      ? attachEngineHealth(config.health, host, {
          clock,
          logger,
          onRestart: (ep) => host.service(PREFIX_INDEX)?.evictEndpoint(ep.index),
        })
      : undefined;
  const admission =
    config.admission.mode !== 'off' && host !== undefined
      ? new AdmissionController({
          routing,
          saturation: new FleetSaturation(host.registry, config.admission.saturation, config.engineMetrics.staleAfterMs),
          config: config.admission,
          clock,
          logger,
        })
      : undefined;

  // A ttft-model learns first-token times from the log's first-body tag: its absence is worth a warning.
  const timingWanted = built?.service(TTFT_MODEL_STATS) !== undefined;
  const accessLog = pending !== undefined ? new AccessLogReceiver(pending, logger, replication?.completions, timingWanted) : undefined;
  const edge = new EdgeContext({
    routing,
    extract: deps.extract ?? extractPrompt,
    requests: config.requests,
    decisionHeader: config.telemetry.decisionHeader,
    clock,
    logger,
    idle: { requestMs: config.server.requestIdleTimeoutMs, responseMs: config.server.responseIdleTimeoutMs },
    ...(admission !== undefined ? { admission } : {}),
    ...(config.admission.tenantHeader !== undefined ? { tenantHeader: config.admission.tenantHeader } : {}),
    ...(config.admission.priorityHeader !== undefined ? { priorityHeader: config.admission.priorityHeader } : {}),
    ...(edgeStats !== undefined ? { stats: edgeStats } : {}),
    ...(deps.assumedBodyMode !== undefined ? { assumedBodyMode: deps.assumedBodyMode } : {}),
    // The completion mode, chosen once: Envoy's access log, or the ext_proc response path.
    completion: pending !== undefined ? new AccessLogCompletion(pending) : new ResponsePathCompletion(edgeStats ?? noopEdgeStats),
    ...(replication !== undefined ? { replicaId: replication.replicaId } : {}),
  });
  const extProc = new ExtProcServer({
    address: config.server.grpcAddress,
    maxReceiveMessageBytes: config.server.maxReceiveMessageBytes,
    edge,
    logger,
    keepalive: { timeMs: config.server.keepaliveTimeMs, timeoutMs: config.server.keepaliveTimeoutMs },
    ...(accessLog !== undefined ? { services: [accessLog.binding()] } : {}),
  });

  if (health !== undefined) admin.addRoute('GET', '/debug/health', (_req, res) => sendJson(res, 200, health.monitor.stats()));
  if (admission !== undefined) admin.addRoute('GET', '/debug/admission', (_req, res) => sendJson(res, 200, admission.stats()));
  if (trafficTrace !== undefined) admin.addRoute('GET', '/debug/traffic-trace', (_req, res) => sendJson(res, 200, trafficTrace.stats()));
  if (replication !== undefined) registerReplicationRoutes(admin, replication, replicaIndex);
  admin.addRoute('GET', '/debug/streams', (_req, res) =>
    sendJson(res, 200, {
      open: edge.openStreams,
      expiredIdle: edge.expiredStreams,
      logLinesSuppressed: edge.logLimiter.suppressed,
      ...(pending !== undefined && accessLog !== undefined
        ? { pendingResponses: pending.snapshot(), accessLog: accessLog.snapshot() }
        : {}),
    }),
  );

  let state: AppState = 'new';
  let schedulerStarted = false;

  const stopAll = async (graceMs: number): Promise<void> => {
    admin.setReady(false);
    await extProc.stop({ graceMs });
    pending?.stop();
    await replication?.stop();
    await discovery?.stop();
    admission?.stop();
    edge.stop();
    health?.stop();
    if (schedulerStarted) {
      schedulerStarted = false;
      scheduler.stop();
    }
    await trafficTrace?.stop();
    await instrumentation.stop?.();
    await admin.stop();
  };

  return {
    get config() {
      return running;
    },
    reloads,
    discoveryStatus: () => discovery?.status() ?? [],
    async reload(next) {
      const changed = changedSections(running, next);
      const applied = changed.filter((k) => (RELOADABLE_SECTIONS as readonly string[]).includes(k));
      const restartRequired = changed.filter((k) => !applied.includes(k));
      if (applied.length > 0) {
        if (discovery === undefined) throw new Error('this router runs no endpoint discovery: endpoints cannot change at run time');
        await discovery.reconfigure(discoveryInput(next, running));
        running = Object.freeze({ ...running, endpoints: next.endpoints, discovery: next.discovery });
      }
      return { result: applied.length > 0 ? 'applied' : 'unchanged', applied, restartRequired };
    },
    scheduler,
    admin,
    extProc,
    logger,
    edge,
    ...(health !== undefined ? { health } : {}),
    ...(admission !== undefined ? { admission } : {}),
    ...(replication !== undefined ? { replication } : {}),
    async start() {
      if (state !== 'new') throw new Error(`router app cannot start in state ${state}`);
      state = 'starting';
      try {
        const a = await admin.start();
        scheduler.start();
        schedulerStarted = true;
        health?.start();
        if (built !== undefined) trafficTrace?.attach(built);
        edge.start();
        pending?.start();
        await discovery?.start();
        // Before serving: connect and replay the index stream (both bounded; never fatal).
        await replication?.start();
        // Before serving: run the request path on scratch parts until V8 has compiled it.
        await warmUpRequestPath({
          config,
          streams: config.server.warmUpStreams,
          budgetMs: WARM_UP_BUDGET_MS,
          extract: deps.extract ?? extractPrompt,
          clock,
          logger,
          // The default telemetry on the scratch parts too (its own registry and admin routes,
          // no spans); an injected instrumentation is the caller's and is left alone.
          ...(deps.instrument === undefined
            ? {
                observe: (s: AppScheduler) =>
                  instrumentTelemetry()({
                    config,
                    scheduler: s,
                    admin: new AdminServer({ address: config.server.adminAddress, logger: silentLogger }),
                    clock,
                    logger: silentLogger,
                  }),
              }
            : {}),
        });
        const g = await extProc.start();
        admin.setReady(true);
        state = 'running';
        return {
          grpcPort: g.port,
          adminPort: a.port,
          grpcAddress: formatHostPort(g.host, g.port),
          adminAddress: formatHostPort(a.host, a.port),
        };
      } catch (err) {
        state = 'stopping';
        await stopAll(0).catch(() => {});
        state = 'stopped';
        throw err;
      }
    },
    async stop(opts = {}) {
      if (state === 'stopped' || state === 'stopping') return;
      if (state === 'new') {
        state = 'stopped';
        return;
      }
      state = 'stopping';
      await stopAll(opts.graceMs ?? config.server.drainTimeoutMs);
      state = 'stopped';
    },
  };
}

/** What discovery reads from a config (engine-metrics polling as it runs, from `base`). */
function discoveryInput(config: RouterConfig, base: RouterConfig = config): DiscoveryInput {
  return {
    endpoints: config.endpoints,
    discovery: config.discovery ?? DEFAULT_DISCOVERY,
    metricsEnabled: base.engineMetrics.enabled,
    defaultPool: DEFAULT_POOL,
  };
}
