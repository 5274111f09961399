/**
 * The phases of one ext_proc stream (see stream-handler.ts) and how long each may stay silent
 * before the idle sweep ends it: a stream waiting on Envoy's request side gets the request idle
 * limit, one whose request was forwarded waits for the engine's response (the response limit),
 * and one held by admission control is bounded by admission's own deadline instead.
 */
import type { StreamIdleTimeouts } from './stream-env.js';

export type StreamPhase =
  /** Waiting for the request headers. */
  | 'headers'
  /** Inference request, FULL_DUPLEX_STREAMED: collecting the body, headers answer held. */
  | 'collecting-body'
  /** Inference request, BUFFERED: headers answered, waiting for the one body message. */
  | 'awaiting-buffered-body'
  /** Inference request held by admission control; the request-side answer is pending. */
  | 'admitting'
  /** Request side answered (decision or pass-through); answering whatever follows. */
  | 'forwarded'
  /** A local reply was sent; Envoy stops processing, later messages are ignored. */
  | 'rejected'
  /** Stream over (half-close, cancel, transport error, or ended by us). */
  | 'closed';

/** How long a stream in `phase` may stay silent; undefined = no limit now. */
export function phaseIdleLimitMs(phase: StreamPhase, idle: StreamIdleTimeouts): number | undefined {
  switch (phase) {
    case 'closed':
    case 'admitting': // admission control bounds this wait with its own deadline
      return undefined;
    case 'forwarded':
      return idle.responseMs;
    default:
      return idle.requestMs;
  }
}
