/**
 * Composition root: turns a validated RouterConfig into a running router —
 * scheduler (strategies, endpoint registry, load signals) → ext_proc edge (gRPC server
 * Envoy calls) → admin HTTP server (health, readiness, routes others register).
 * Everything with a lifecycle is started here in dependency order and stopped in reverse.
 * Tests build apps in-process on port 0 with fakes injected through `deps`.
 */
import type { RouterConfig } from './config/types.js';
import type { Endpoint } from './core/types.js';
import type { RoutingService } from './core/routing-service.js';
import { createScheduler } from './scheduling/create-scheduler.js';
import { extractPrompt } from './request/extract-prompt.js';
import { AdminServer } from './admin/admin-server.js';
import { ExtProcServer } from './extproc/ext-proc-server.js';
import { EdgeContext } from './extproc/stream-handler.js';
import type { PromptExtractor } from './extproc/stream-handler.js';
import type { EdgeStats } from './extproc/edge-stats.js';
import type { BodySendMode } from './extproc/ext-proc-proto.js';
import { systemClock } from './util/clock.js';
import type { Clock } from './util/clock.js';
import { seededRng } from './util/rng.js';
import type { Rng } from './util/rng.js';
import { createLogger } from './telemetry/logger.js';
import type { Logger } from './telemetry/logger.js';
import { instrumentTelemetry } from './telemetry/instrument-app.js';

/** What the app needs from the scheduler (src/scheduling/create-scheduler.ts). */
export interface AppScheduler extends RoutingService {
  start(): void;
  stop(): void;
  endpoints(): readonly Endpoint[];
}

/** The parts an instrumentation hook may observe or wrap. */
export interface AppParts {
  readonly config: RouterConfig;
  readonly scheduler: AppScheduler;
  readonly admin: AdminServer;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * Returned by an instrumentation hook (telemetry): an optional decorated RoutingService
 * (decision spans, metrics), an EdgeStats sink, and cleanup run at stop.
 */
export interface Instrumentation {
  readonly routing?: RoutingService;
  readonly edgeStats?: EdgeStats;
  stop?(): void | Promise<void>;
}

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
}

export interface StartedAddresses {
  readonly grpcPort: number;
  readonly adminPort: number;
  /** `host:port` strings as bound. */
  readonly grpcAddress: string;
  readonly adminAddress: string;
}

export interface RouterApp {
  readonly config: RouterConfig;
  readonly scheduler: AppScheduler;
  readonly admin: AdminServer;
  readonly extProc: ExtProcServer;
  readonly logger: Logger;
  start(): Promise<StartedAddresses>;
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
  const scheduler: AppScheduler = deps.scheduler ?? createScheduler(config, { clock, rng, logger });
  const admin = new AdminServer({ address: config.server.adminAddress, logger });
  // Default telemetry: metrics, /debug/*, decision spans when OTEL_* configures an exporter.
  const instrument = deps.instrument ?? instrumentTelemetry({ tracing: 'env' });
  const instrumentation: Instrumentation = instrument({ config, scheduler, admin, clock, logger });
  const routing = instrumentation.routing ?? scheduler;
  const edgeStats = deps.edgeStats ?? instrumentation.edgeStats;

  const edge = new EdgeContext({
    routing,
    extract: deps.extract ?? extractPrompt,
    requests: config.requests,
    decisionHeader: config.telemetry.decisionHeader,
    clock,
    logger,
    ...(edgeStats !== undefined ? { stats: edgeStats } : {}),
    ...(deps.assumedBodyMode !== undefined ? { assumedBodyMode: deps.assumedBodyMode } : {}),
  });
  const extProc = new ExtProcServer({
    address: config.server.grpcAddress,
    maxReceiveMessageBytes: config.server.maxReceiveMessageBytes,
    edge,
    logger,
    keepalive: { timeMs: config.server.keepaliveTimeMs, timeoutMs: config.server.keepaliveTimeoutMs },
  });

  let state: AppState = 'new';
  let schedulerStarted = false;

  const stopAll = async (graceMs: number): Promise<void> => {
    admin.setReady(false);
    await extProc.stop({ graceMs });
    if (schedulerStarted) {
      schedulerStarted = false;
      scheduler.stop();
    }
    await instrumentation.stop?.();
    await admin.stop();
  };

  return {
    config,
    scheduler,
    admin,
    extProc,
    logger,
    async start() {
      if (state !== 'new') throw new Error(`router app cannot start in state ${state}`);
      state = 'starting';
      try {
        const a = await admin.start();
        scheduler.start();
        schedulerStarted = true;
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

function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
