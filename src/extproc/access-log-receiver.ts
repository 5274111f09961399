/**
 * Receives Envoy's gRPC access log (`envoy.access_loggers.http_grpc`, service
 * AccessLogService/StreamAccessLogs) on the router's gRPC server and ends routed requests
 * from it. Why: the access log is written by Envoy after the HTTP stream is over and travels
 * on its own stream, so the router learns exactly how and when each request ended (status,
 * client abort, upstream reset, served host) while staying out of the response path: no
 * response message ever waits for the router, and a router crash cannot cut a response.
 *
 * An entry is matched to its request by the key the router put into the decision's dynamic
 * metadata (`cacheroute.ticket`, see pending-responses.ts). Entries without one (requests
 * the router did not route) are counted and ignored; keys of this replica that it no longer
 * holds are counted as unknown. A key naming another owner is handed to the `forwarder`
 * (src/replication/completion-forwarding.ts: sent to the owner over NATS), grouped per owner
 * and batch; without one (no replication) it is counted as `foreign` and ignored — right
 * when every replica gets its own copy of the log (one access logger per replica), a leak
 * bounded only by the route timeout when the log stream is load-balanced across replicas,
 * so the first such entry is logged as a warning. Envoy never expects an answer here.
 *
 * A routed entry without the first-body tag (`cacheroute.first_body_us`) comes from a logger
 * not configured with it (Envoy Gateway's ALS sink cannot add custom tags; docs/deploy.md):
 * the request still completes, but a TTFT model learns no first-token time from it. Those are
 * counted (`untimed`), and with `timingWanted` (a ttft-model is configured) the first one is
 * logged as a warning.
 */
import type * as grpc from '@grpc/grpc-js';
import type { RequestOutcome } from '../core/types.js';
import type { Logger } from '../logging/logger.js';
import type { HTTPAccessLogEntry__Output, StreamAccessLogsMessage__Output } from './access-log-proto.js';
import { accessLogServiceDefinition } from './access-log-proto.js';
import type { GrpcServiceBinding } from './ext-proc-server.js';
import type { PendingResponses } from './pending-responses.js';
import { ticketOwner } from './pending-responses.js';
import { CACHEROUTE_FIRST_BODY_TAG, CACHEROUTE_METADATA_NAMESPACE, CACHEROUTE_TICKET_KEY } from './response-builders.js';
import { formatHostPort } from '../util/host-port.js';

type LogCall = grpc.ServerReadableStream<StreamAccessLogsMessage__Output, Record<string, never>>;

export interface AccessLogReceiverStats {
  readonly streams: number;
  readonly entries: number;
  /** Entries without a ticket key (requests the router did not route). */
  readonly unrouted: number;
  /** Entries naming another replica's ticket, handed to the forwarder. */
  readonly forwarded: number;
  /** Entries naming another replica's ticket with no forwarder (ignored). */
  readonly foreign: number;
  /** Routed entries (any owner) whose logger sets no first-body tag: no first-token time. */
  readonly untimed: number;
}

/** Where completions of other replicas' tickets go (the NATS forwarder). */
export interface CompletionForwarder {
  forward(owner: string, batch: { key: string; outcome: RequestOutcome }[]): void;
}

export class AccessLogReceiver {
  private streams = 0;
  private entries = 0;
  private unrouted = 0;
  private forwarded = 0;
  private foreign = 0;
  private untimed = 0;
  /** Per-batch grouping of other owners' completions (reused). */
  private readonly others = new Map<string, { key: string; outcome: RequestOutcome }[]>();

  constructor(
    private readonly pending: PendingResponses,
    private readonly logger: Logger,
    private readonly forwarder?: CompletionForwarder,
    /** A TTFT model learns from the first-body tag: warn once when entries carry none. */
    private readonly timingWanted = false,
  ) {}

  /** The service to add to the router's gRPC server. */
  binding(): GrpcServiceBinding {
    return {
      definition: accessLogServiceDefinition(),
      implementation: {
        StreamAccessLogs: (call: LogCall, callback: grpc.sendUnaryData<Record<string, never>>) => this.onStream(call, callback),
      },
    };
  }

  snapshot(): AccessLogReceiverStats {
    return {
      streams: this.streams,
      entries: this.entries,
      unrouted: this.unrouted,
      forwarded: this.forwarded,
      foreign: this.foreign,
      untimed: this.untimed,
    };
  }

  /** Handles one batch (exported for unit tests through the class). */
  onMessage(msg: StreamAccessLogsMessage__Output): void {
    for (const entry of msg.http_logs?.log_entry ?? []) this.onEntry(entry);
    if (this.others.size === 0) return;
    for (const [owner, batch] of this.others) {
      try {
        this.forwarder!.forward(owner, batch);
      } catch (err) {
        this.logger.warn('access log: forwarding completions failed', { error: err instanceof Error ? err.message : String(err) });
      }
    }
    this.others.clear();
  }

  private onStream(call: LogCall, callback: grpc.sendUnaryData<Record<string, never>>): void {
    this.streams++;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      callback(null, {});
    };
    call.on('data', (msg: StreamAccessLogsMessage__Output) => this.onMessage(msg));
    call.on('end', finish);
    call.on('error', (err: unknown) => {
      this.logger.debug('access log stream error', { error: err instanceof Error ? err.message : String(err) });
    });
  }

  private onEntry(entry: HTTPAccessLogEntry__Output): void {
    this.entries++;
    const common = entry.common_properties;
    const type = common?.access_log_type;
    if (type !== undefined && type !== 'NotSet' && type !== 'DownstreamEnd') return;
    const key = common?.metadata?.filter_metadata?.[CACHEROUTE_METADATA_NAMESPACE]?.fields?.[CACHEROUTE_TICKET_KEY]?.stringValue;
    if (typeof key !== 'string' || key === '') {
      this.unrouted++;
      return;
    }
    if (common?.custom_tags?.[CACHEROUTE_FIRST_BODY_TAG] === undefined && this.untimed++ === 0 && this.timingWanted) {
      this.logger.warn(
        `access log: entries carry no ${CACHEROUTE_FIRST_BODY_TAG} tag, so the ttft-model learns no first-token times from them and keeps its priors (add the tag to the access logger as envoy/override-host.yaml does; Envoy Gateway: docs/deploy.md)`,
      );
    }
    const owner = ticketOwner(key);
    if (owner === undefined || owner === this.pending.owner) {
      this.pending.complete(key, outcomeOf(entry));
      return;
    }
    if (this.forwarder === undefined) {
      if (this.foreign++ === 0) {
        this.logger.warn(
          "access log: entries name another replica's tickets and replication is off; those requests stay in flight on their owner until server.responseIdleTimeoutMs (give each replica its own access logger, or turn replication on)",
        );
      }
      return;
    }
    this.forwarded++;
    let batch = this.others.get(owner);
    if (batch === undefined) this.others.set(owner, (batch = []));
    batch.push({ key, outcome: outcomeOf(entry) });
  }
}

/** How the request ended, from its access log entry. Exported for tests. */
export function outcomeOf(entry: HTTPAccessLogEntry__Output): RequestOutcome {
  const common = entry.common_properties;
  const f = common?.response_flags;
  const code = entry.response?.response_code?.value;
  const status = typeof code === 'number' && code > 0 ? code : undefined;
  // Any reset, termination or timeout means the response did not complete.
  const aborted =
    status === undefined ||
    f?.downstream_connection_termination === true ||
    f?.downstream_remote_reset === true ||
    f?.upstream_remote_reset === true ||
    f?.upstream_connection_termination === true ||
    f?.upstream_connection_failure === true ||
    f?.local_reset === true ||
    f?.upstream_request_timeout === true ||
    f?.stream_idle_timeout === true;
  const sa = common?.upstream_remote_address?.socket_address;
  const servedBy =
    sa !== undefined && sa !== null && sa.address !== '' && typeof sa.port_value === 'number'
      ? formatHostPort(sa.address, sa.port_value)
      : undefined;
  // The decoder fills an absent field with "0": an empty body and no report both read as none.
  const bodyBytes = Number(entry.response?.response_body_bytes ?? Number.NaN);
  const firstBodyMs = firstBodyMsOf(common?.custom_tags?.[CACHEROUTE_FIRST_BODY_TAG]);
  return {
    aborted,
    ...(status !== undefined ? { status } : {}),
    ...(servedBy !== undefined ? { servedBy } : {}),
    ...(Number.isSafeInteger(bodyBytes) && bodyBytes > 0 ? { responseBytes: bodyBytes } : {}),
    ...(firstBodyMs !== undefined ? { firstBodyMs } : {}),
  };
}

/**
 * The first-body tag's value (whole microseconds) in ms. Envoy writes an empty string when a
 * time point is missing (no body, no upstream): that, and anything not a plain non-negative
 * integer below an hour, is no value.
 */
function firstBodyMsOf(v: string | undefined): number | undefined {
  if (v === undefined || v.length === 0 || v.length > 12 || !/^[0-9]+$/.test(v)) return undefined;
  const us = Number(v);
  return us < 3_600_000_000 ? us / 1000 : undefined;
}
