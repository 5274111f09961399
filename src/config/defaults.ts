/**
 * Defaults of the router-wide configuration sections (server, routing), as named constants
 * with the reason for each value. Each feature's defaults live with its own section schema
 * (src/request/requests-config.ts, src/endpoints/endpoint-config.ts, …) and each plugin's
 * with its parameter schema. parseConfig
 * applies these; docs/configuration.md lists them.
 */
import type { StrategyName } from '../plugins/presets/presets.js';
import { DEFAULT_MAX_BODY_BYTES } from '../request/requests-config.js';

export const API_VERSION = 'cacheroute/v1' as const;

// --- server ---
/** ext_proc gRPC port 9002 as GIE's endpoint picker; loopback unless the operator opens it. */
export const DEFAULT_GRPC_ADDRESS = '127.0.0.1:9002';
/** Admin/health port 9003 as GIE's health port; loopback because explain data is internal. */
export const DEFAULT_ADMIN_ADDRESS = '127.0.0.1:9003';
/** Long enough for most in-flight streams to finish their ext_proc exchange on SIGTERM. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;
/**
 * gRPC's own server keepalive defaults (2 h / 20 s): a dead Envoy connection is noticed and
 * its streams' in-flight accounting released without pinging healthy, busy connections.
 */
export const DEFAULT_KEEPALIVE_TIME_MS = 2 * 60 * 60 * 1000;
export const DEFAULT_KEEPALIVE_TIMEOUT_MS = 20_000;
/**
 * Synthetic ext_proc streams through a scratch copy of the request path before serving, so
 * V8 has compiled it when the first real request comes (src/compose/warm-up.ts; decision
 * 0207). Measured on the 2-core development machine: see the decision.
 */
export const DEFAULT_WARM_UP_STREAMS = 600;
/**
 * An ext_proc stream silent this long before its request was answered is abandoned (Envoy
 * sends headers and body as the client uploads them; half a minute of silence mid-upload is
 * a stalled or vanished client).
 */
export const DEFAULT_REQUEST_IDLE_TIMEOUT_MS = 30_000;
/**
 * After the answer, silence is normal until the engine's response headers (a non-streamed
 * answer sends them only when it is complete): the shipped Envoy configs' route timeout.
 */
export const DEFAULT_RESPONSE_IDLE_TIMEOUT_MS = 600_000;
/**
 * How the router learns that a routed request's response ended: from Envoy's gRPC access log
 * (the shipped Envoy configs; the router stays out of the response path), or from response
 * messages on the ext_proc stream (an Envoy config that streams responses through it).
 */
export const RESPONSE_COMPLETION_MODES = ['access-log', 'ext-proc'] as const;
export const DEFAULT_RESPONSE_COMPLETION = 'access-log' as const;
/** Headroom over the largest body for the surrounding protobuf/gRPC framing. */
export const GRPC_FRAMING_HEADROOM_BYTES = 1024 * 1024;
/** gRPC max receive size: largest body plus framing headroom. */
export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = DEFAULT_MAX_BODY_BYTES + GRPC_FRAMING_HEADROOM_BYTES;

// --- routing ---
/** Cache-aware is the point of this router. */
export const DEFAULT_STRATEGY: StrategyName = 'cache-aware';
/** Two fallbacks let Envoy retry twice on other engines without making the list long. */
export const DEFAULT_FALLBACKS = 2;
/** Fixed seed so runs are reproducible unless the operator asks otherwise. */
export const DEFAULT_SEED = 1;
