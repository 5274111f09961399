/**
 * Receives Envoy's gRPC access log (`envoy.access_loggers.http_grpc`, service
 * AccessLogService/StreamAccessLogs) on the router's gRPC server and ends routed requests
 * from it. Why: the access log is written by Envoy after the HTTP stream is over and travels
 * on its own stream, so the router learns exactly how and when each request ended (status,
 * client abort, upstream reset, served host) while staying out of the response path: no
 * response message ever waits for the router, and a router crash cannot cut a response.
 *
 * An entry is matched to its request by the key the router put into the decision's dynamic
 * metadata (`cacheroute.ticket`, see pending-responses.ts); entries without one (requests
 * the router did not route) and keys this router does not hold (another replica's) are
 * counted and ignored. Envoy never expects an answer on this stream.
 */
import type * as grpc from '@grpc/grpc-js';
import type { RequestOutcome } from '../core/types.js';
import type { Logger } from '../logging/logger.js';
import type { HTTPAccessLogEntry__Output, StreamAccessLogsMessage__Output } from './access-log-proto.js';
import { accessLogServiceDefinition } from './access-log-proto.js';
import type { GrpcServiceBinding } from './ext-proc-server.js';
import type { PendingResponses } from './pending-responses.js';
import { CACHEROUTE_METADATA_NAMESPACE, CACHEROUTE_TICKET_KEY } from './response-builders.js';
import { formatHostPort } from '../util/host-port.js';

type LogCall = grpc.ServerReadableStream<StreamAccessLogsMessage__Output, Record<string, never>>;

export interface AccessLogReceiverStats {
  readonly streams: number;
  readonly entries: number;
  /** Entries without a ticket key (requests the router did not route). */
  readonly unrouted: number;
}

export class AccessLogReceiver {
  private streams = 0;
  private entries = 0;
  private unrouted = 0;

  constructor(
    private readonly pending: PendingResponses,
    private readonly logger: Logger,
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
    return { streams: this.streams, entries: this.entries, unrouted: this.unrouted };
  }

  /** Handles one batch (exported for unit tests through the class). */
  onMessage(msg: StreamAccessLogsMessage__Output): void {
    for (const entry of msg.http_logs?.log_entry ?? []) this.onEntry(entry);
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
    this.pending.complete(key, outcomeOf(entry));
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
    sa !== undefined && sa !== null && sa.address !== '' && typeof sa.port_value === 'number' ? formatHostPort(sa.address, sa.port_value) : undefined;
  return { aborted, ...(status !== undefined ? { status } : {}), ...(servedBy !== undefined ? { servedBy } : {}) };
}
