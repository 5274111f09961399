/**
 * The edge context: everything prepared once per ext_proc server and shared by its streams
 * (stream-handler.ts) — the request matcher and mapping, the completion mode, the stats
 * sink — plus the two jobs that span streams:
 *
 * - Stream hygiene: a stream that sees no message for the idle timeout of its phase (before
 *   the decision: `requestMs`; after it: `responseMs`, which must outlast the quietest
 *   legitimate response) is expired by `sweepIdle` — its ticket finished as aborted and the
 *   stream failed with DEADLINE_EXCEEDED — so an abandoned stream cannot stay counted in
 *   flight.
 * - Log volume: lines about bad streams are rate-limited per cause (rate-limited-log.ts), and
 *   `stop` writes one summary of what the limit dropped.
 */
import { randomUUID } from 'node:crypto';
import type { RequestsConfig } from '../request/requests-config.js';
import type { AdmissionService, RouteTicket, RoutingService } from '../core/routing-service.js';
import type { LogFields, Logger } from '../logging/logger.js';
import { RateLimitedLog } from '../logging/rate-limited-log.js';
import { formatDecisionSummary } from './decision-header.js';
import type { Clock } from '../util/clock.js';
import { ResponsePathCompletion, type CompletionMode } from './completion-mode.js';
import { noopEdgeStats, type EdgeStats } from './edge-stats.js';
import type { BodySendMode } from './ext-proc-proto.js';
import { InferenceMatcher } from './inference-request-rules.js';
import { requestMapping, type PromptExtractor, type RequestMapping } from './request-mapping.js';
import type { OpenStream, ProcessStream, StreamEnv, StreamIdleTimeouts } from './stream-env.js';
import { StreamHandler } from './stream-handler.js';

export interface EdgeOptions {
  readonly routing: RoutingService;
  readonly extract: PromptExtractor;
  readonly requests: RequestsConfig;
  /** Add `x-cacheroute-decision` to the response headers (config telemetry.decisionHeader). */
  readonly decisionHeader: boolean;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly stats?: EdgeStats;
  /**
   * Body mode assumed when Envoy sends no `protocol_config` (Envoy < 1.34). The modes are
   * indistinguishable from what arrives, so this must match the Envoy config.
   */
  readonly assumedBodyMode?: BodySendMode;
  readonly newRequestId?: () => string;
  /** Admission control in front of `routing` (absent: every request is routed at once). */
  readonly admission?: AdmissionService;
  /** Request header naming the tenant (admission fairness); lower-case or any case. */
  readonly tenantHeader?: string;
  /** Request header carrying an integer priority (higher first); absent or invalid = 0. */
  readonly priorityHeader?: string;
  /** Idle timeouts; absent = streams never expire. */
  readonly idle?: StreamIdleTimeouts;
  /** Rate limiter for per-cause log lines (default: 5 lines per cause per 10 s). */
  readonly logLimiter?: RateLimitedLog;
  /** How routed requests' ends reach their tickets (default: the response path, ResponsePathCompletion). */
  readonly completion?: CompletionMode;
  /** This router replica's id, appended to the decision summary as `replica=<id>`. */
  readonly replicaId?: string;
}

export class EdgeContext implements StreamEnv {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly routing: RoutingService;
  readonly admission: AdmissionService | undefined;
  readonly decisionHeader: boolean;
  readonly matcher: InferenceMatcher;
  readonly mapping: RequestMapping;
  readonly stats: EdgeStats;
  readonly completion: CompletionMode;
  readonly assumedBodyMode: BodySendMode;
  readonly newRequestId: () => string;
  readonly logLimiter: RateLimitedLog;
  private readonly replicaSuffix: string;
  /** Set once a degraded (header-only) body mode was logged. */
  private warnedHeaderOnly = false;
  /** Open streams (for the idle sweep). */
  private readonly open_ = new Set<OpenStream>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private expiredCount = 0;

  constructor(readonly options: EdgeOptions) {
    this.clock = options.clock;
    this.logger = options.logger;
    this.routing = options.routing;
    this.admission = options.admission;
    this.decisionHeader = options.decisionHeader;
    this.matcher = new InferenceMatcher(options.requests);
    this.mapping = requestMapping({
      extract: options.extract,
      maxBodyBytes: options.requests.maxBodyBytes,
      maxPrefixChars: options.requests.maxPrefixChars,
      charsPerToken: options.requests.charsPerToken,
      tenantHeader: options.tenantHeader,
      priorityHeader: options.priorityHeader,
    });
    this.stats = options.stats ?? noopEdgeStats;
    this.completion = options.completion ?? new ResponsePathCompletion(this.stats);
    this.assumedBodyMode = options.assumedBodyMode ?? 'FULL_DUPLEX_STREAMED';
    this.newRequestId = options.newRequestId ?? randomUUID;
    this.logLimiter = options.logLimiter ?? new RateLimitedLog({ clock: options.clock });
    this.replicaSuffix =
      options.replicaId !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(options.replicaId) ? `;replica=${options.replicaId}` : '';
  }

  /** The decision summary (x-cacheroute-decision), with this replica's id when known. */
  summaryOf(ticket: RouteTicket): string {
    const s = formatDecisionSummary(ticket.decision);
    return this.replicaSuffix === '' ? s : s + this.replicaSuffix;
  }

  open(stream: ProcessStream): StreamHandler {
    const h = new StreamHandler(this, stream);
    this.open_.add(h);
    return h;
  }

  /** Streams opened and not yet closed. */
  get openStreams(): number {
    return this.open_.size;
  }

  /** Streams expired by the idle timeout so far. */
  get expiredStreams(): number {
    return this.expiredCount;
  }

  /** Arms the idle sweep (a no-op without idle timeouts). Idempotent. */
  start(): void {
    const idle = this.options.idle;
    if (idle === undefined || this.sweepTimer !== undefined) return;
    const everyMs = Math.min(5_000, Math.max(50, Math.min(idle.requestMs, idle.responseMs) / 4));
    this.sweepTimer = setInterval(() => this.sweepIdle(), everyMs);
    this.sweepTimer.unref();
  }

  /** Stops the idle sweep and writes a summary of log lines the rate limit dropped. */
  stop(): void {
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    const dropped = this.logLimiter.drainSuppressed();
    const causes = Object.keys(dropped);
    if (causes.length > 0) {
      const fields: LogFields = {};
      for (const c of causes) fields[c] = dropped[c]!;
      this.options.logger.info('log lines suppressed by the rate limit, by cause', fields);
    }
  }

  /** Expires every stream idle longer than its phase allows. Returns how many. */
  sweepIdle(nowMs: number = this.options.clock.nowMs()): number {
    const idle = this.options.idle;
    if (idle === undefined) return 0;
    let expired = 0;
    for (const h of [...this.open_]) {
      const limit = h.idleLimitMs(idle);
      if (limit !== undefined && nowMs - h.lastActivityMs > limit) {
        h.expire(nowMs - h.lastActivityMs);
        expired++;
      }
    }
    this.expiredCount += expired;
    return expired;
  }

  /** A stream ended. */
  closed(stream: OpenStream): void {
    this.open_.delete(stream);
  }

  /** Writes a log line unless its cause is over the rate limit. */
  limitedLog(logger: Logger, level: 'debug' | 'info' | 'warn' | 'error', cause: string, msg: string, fields: LogFields): void {
    if (!logger.enabled(level)) return;
    this.logLimiter.log(cause, (extra) => logger[level](msg, { ...fields, ...extra }));
  }

  /** Logs once that the body mode gives no body before the headers are released. */
  headerOnlyRouting(bodyMode: BodySendMode): void {
    if (this.warnedHeaderOnly) return;
    this.warnedHeaderOnly = true;
    this.options.logger.warn('request body mode gives the router no body before the headers are released; routing on load only', {
      body_mode: bodyMode,
    });
  }
}
