/**
 * The one interface every endpoint source implements (static list, watched file, DNS,
 * Kubernetes pods, InferencePool), and the shared base that fans out updates and keeps the
 * status the admin API and metrics report.
 *
 * A source always emits the FULL set it currently believes in, never deltas: consumers
 * (src/discovery/pool-membership.ts) then rebuild their view from one source of truth, and
 * a missed or duplicated update cannot leave a ghost engine behind. A source that cannot
 * refresh (bad file, DNS or API server down) keeps its last good set and records why.
 */
import type { EngineRole } from '../core/types.js';
import { formatHostPort } from '../util/host-port.js';

/** One engine address a source found. */
export interface DiscoveredEndpoint {
  /** IP literal (v4, or v6 without brackets). */
  readonly address: string;
  readonly port: number;
  /** Models the engine serves, when the source knows (else the pool's). */
  readonly models?: readonly string[];
  /** Prefill/decode role, when the source knows (file entry, pod label, source config). */
  readonly role?: EngineRole;
}

/** Why a refresh failed; a closed set so it can label a metric. */
export type SourceErrorReason =
  | 'read' // file could not be read
  | 'parse' // file (or an object) was not a valid endpoint list
  | 'resolve' // DNS gave no answer or failed
  | 'watch' // Kubernetes list/watch failed (API server unreachable, forbidden…)
  | 'missing'; // the watched object (file, InferencePool) does not exist

export const SOURCE_ERROR_REASONS: readonly SourceErrorReason[] = ['read', 'parse', 'resolve', 'watch', 'missing'];

export interface SourceStatus {
  readonly name: string;
  readonly kind: string;
  /** Endpoints in the last set emitted. */
  readonly endpoints: number;
  /** True once the source emitted its first set. */
  readonly synced: boolean;
  /** Sets emitted that differed from the previous one. */
  readonly updates: number;
  /** Failed refreshes by reason. */
  readonly errors: Readonly<Record<SourceErrorReason, number>>;
  /** The last failure, until a refresh succeeds again. */
  readonly lastError?: string;
}

export type SourceListener = (endpoints: readonly DiscoveredEndpoint[]) => void;

export interface EndpointSource {
  /** Unique, human-readable (`file:/etc/engines.yaml`, `kubernetes:ns/app=vllm`). */
  readonly name: string;
  /** Begins discovery; the first set is emitted as soon as it is known. Stops on `signal`. */
  start(signal: AbortSignal): void;
  /** Stops timers and watches; idempotent. */
  stop(): Promise<void>;
  /** Observes every new set (not repeated when unchanged). Returns the unsubscribe function. */
  onUpdate(listener: SourceListener): () => void;
  /** The last set emitted (empty before the first). */
  current(): readonly DiscoveredEndpoint[];
  status(): SourceStatus;
}

export interface SourceLog {
  warn(msg: string, fields?: Record<string, string | number | boolean | undefined>): void;
  info(msg: string, fields?: Record<string, string | number | boolean | undefined>): void;
}

/** `ip:port`, IPv6 in brackets: the id Envoy uses. */
export function endpointKey(e: DiscoveredEndpoint): string {
  return formatHostPort(e.address, e.port);
}

/** Listener fan-out, change detection and status for the concrete sources. */
export abstract class SourceBase implements EndpointSource {
  abstract readonly kind: string;
  private readonly listeners = new Set<SourceListener>();
  private last: readonly DiscoveredEndpoint[] = [];
  private lastKey: string | undefined;
  private updates = 0;
  private readonly errors: Record<SourceErrorReason, number> = { read: 0, parse: 0, resolve: 0, watch: 0, missing: 0 };
  private lastError: string | undefined;

  constructor(
    readonly name: string,
    protected readonly log: SourceLog,
  ) {}

  abstract start(signal: AbortSignal): void;
  abstract stop(): Promise<void>;

  onUpdate(listener: SourceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  current(): readonly DiscoveredEndpoint[] {
    return this.last;
  }

  status(): SourceStatus {
    return {
      name: this.name,
      kind: this.kind,
      endpoints: this.last.length,
      synced: this.lastKey !== undefined,
      updates: this.updates,
      errors: { ...this.errors },
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
    };
  }

  /** Emits `set` (sorted, deduplicated by address) unless it equals the last one. */
  protected publish(set: readonly DiscoveredEndpoint[]): void {
    const byKey = new Map<string, DiscoveredEndpoint>();
    for (const e of set) if (!byKey.has(endpointKey(e))) byKey.set(endpointKey(e), e);
    const sorted = [...byKey.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, e]) => e);
    const key = JSON.stringify(sorted.map((e) => [endpointKey(e), e.models ?? null, e.role ?? null]));
    if (key === this.lastKey) return;
    this.lastKey = key;
    this.last = Object.freeze(sorted);
    this.updates++;
    this.log.info('endpoint source updated', { source: this.name, endpoints: sorted.length });
    for (const l of [...this.listeners]) l(this.last);
  }

  /** A refresh fully succeeded: clears the last error (logging the recovery once). */
  protected recovered(): void {
    if (this.lastError === undefined) return;
    this.lastError = undefined;
    this.log.info('endpoint source recovered', { source: this.name, endpoints: this.last.length });
  }

  /**
   * Records a failed refresh: the last good set stays. Logs when the failure differs from
   * the previous one (a source retrying against the same outage writes one line, not one
   * per retry; the error counter counts them all).
   */
  protected fail(reason: SourceErrorReason, message: string): void {
    this.errors[reason]++;
    const text = `${reason}: ${message}`;
    if (text === this.lastError) return;
    this.lastError = text;
    this.log.warn('endpoint source refresh failed; keeping the last good set', {
      source: this.name,
      reason,
      error: message,
      endpoints: this.last.length,
    });
  }
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
