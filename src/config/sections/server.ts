/** `server:` section: listen addresses and gRPC limits. */
import { z } from 'zod';
import { ALWAYS, int, optionalSection } from '../../util/schema.js';
import {
  DEFAULT_ADMIN_ADDRESS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_GRPC_ADDRESS,
  DEFAULT_KEEPALIVE_TIME_MS,
  DEFAULT_KEEPALIVE_TIMEOUT_MS,
  DEFAULT_REQUEST_IDLE_TIMEOUT_MS,
  DEFAULT_RESPONSE_COMPLETION,
  DEFAULT_RESPONSE_IDLE_TIMEOUT_MS,
  DEFAULT_WARM_UP_STREAMS,
  RESPONSE_COMPLETION_MODES,
} from '../defaults.js';
import type { ConfigSection } from '../config-section.js';
import { listenAddress } from '../../util/schema-checks.js';

const schema = optionalSection({
  grpcAddress: listenAddress.default(DEFAULT_GRPC_ADDRESS).describe('ext_proc gRPC listen address host:port (port 0 = ephemeral).'),
  adminAddress: listenAddress.default(DEFAULT_ADMIN_ADDRESS).describe('Admin HTTP (health, readiness, /metrics, /debug) host:port.'),
  drainTimeoutMs: int({ min: 0, max: 600_000 })
    .default(DEFAULT_DRAIN_TIMEOUT_MS)
    .describe('On SIGTERM: how long open streams may finish before being cut.'),
  /** Default: fitted to requests.maxBodyBytes (see parse-config.ts). */
  maxReceiveMessageBytes: int({ min: 1024, max: 2 ** 31 - 1 })
    .optional()
    .describe('Largest gRPC message accepted (must exceed the largest buffered body).'),
  keepaliveTimeMs: int({ min: 0, max: 24 * 60 * 60 * 1000 })
    .default(DEFAULT_KEEPALIVE_TIME_MS)
    .describe('Server keepalive PING interval per Envoy connection; 0 = off.'),
  keepaliveTimeoutMs: int({ min: 1, max: 10 * 60 * 1000 })
    .default(DEFAULT_KEEPALIVE_TIMEOUT_MS)
    .describe('A keepalive PING not acknowledged within this closes the connection.'),
  requestIdleTimeoutMs: int({ min: 100, max: 3_600_000 })
    .default(DEFAULT_REQUEST_IDLE_TIMEOUT_MS)
    .describe('An ext_proc stream silent this long before its request was answered is expired (accounting released).'),
  responseIdleTimeoutMs: int({ min: 100, max: 24 * 3_600_000 })
    .default(DEFAULT_RESPONSE_IDLE_TIMEOUT_MS)
    .describe('...and after it; must outlast the quietest legitimate response (Envoy route timeout).'),
  responseCompletion: z
    .enum(RESPONSE_COMPLETION_MODES)
    .default(DEFAULT_RESPONSE_COMPLETION)
    .describe(
      "How a routed request is seen to end: Envoy's gRPC access log (served on the ext_proc port; a request with no entry after responseIdleTimeoutMs counts as aborted) or response messages on the ext_proc stream. Must match the Envoy config.",
    ),
  warmUpStreams: int({ min: 0, max: 100_000 })
    .default(DEFAULT_WARM_UP_STREAMS)
    .describe(
      'Synthetic ext_proc streams run through a scratch copy of the request path (own loopback server, edge and scheduler) before serving, so the first real requests run compiled code; 0 = off.',
    ),
}).superRefine((s, ctx) => {
  if (typeof s !== 'object' || s === null) return;
  if (typeof s.keepaliveTimeMs === 'number' && s.keepaliveTimeMs > 0 && s.keepaliveTimeMs < 1000) {
    ctx.addIssue({ code: 'custom', path: ['keepaliveTimeMs'], message: 'must be 0 (off) or at least 1000 ms' });
  }
  if (typeof s.grpcAddress === 'string' && s.grpcAddress === s.adminAddress && !s.grpcAddress.endsWith(':0')) {
    ctx.addIssue({ code: 'custom', path: ['adminAddress'], message: `must differ from server.grpcAddress (${s.grpcAddress})` });
  }
}, ALWAYS);

export type ServerSection = z.output<typeof schema>;
/** The validated section, with the gRPC limit resolved. */
export type ServerConfig = Omit<ServerSection, 'maxReceiveMessageBytes'> & { readonly maxReceiveMessageBytes: number };

export const serverSection = { key: 'server', schema } as const satisfies ConfigSection;
