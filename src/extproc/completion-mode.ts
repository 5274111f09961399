/**
 * Completion modes: how a routed request's end reaches its ticket (its in-flight slot), one
 * object chosen once at the composition root from `server.responseCompletion` and shared by
 * every stream. The stream handler reports what it saw of the response — and, at the
 * decision, asks whether it may let the stream go once the request side is answered — and
 * the mode decides what that means for the ticket.
 *
 * - ResponsePathCompletion (`ext-proc`): the stream is the only signal. The response
 *   completing finishes the ticket; any other end of the stream finishes it as aborted,
 *   except that with response body mode NONE seeing the response headers is the most the
 *   stream can know, so that counts as complete.
 * - AccessLogCompletion (`access-log`): the ticket is held by PendingResponses under a key
 *   that rides in the decision metadata; Envoy's access log entry finishes it. Once the log
 *   is known to reach us (`present`), the stream is let go after the request side and only
 *   a response it saw complete finishes the ticket here; every other end is left to the log
 *   (which knows the outcome). Until then (`unknown`) streams are let go all the same and a
 *   ticket waits for the log at most `logWaitMs`; past that the log counts as `absent`
 *   (pending-responses.ts) — a gateway may send no access log at all — and the stream is the
 *   fallback: one that Envoy said carries the response (its `protocol_config` names a
 *   response body mode) is kept and what it sees of the response end finishes the ticket,
 *   exactly as on the response path; one that carries none finishes it when it ends
 *   (nothing reports the response's end then, but nothing stays counted either). First
 *   signal wins: a log entry for a ticket the stream already finished counts as unknown.
 */
import type { RequestOutcome } from '../core/types.js';
import type { RouteTicket } from '../core/routing-service.js';
import type { EdgeStats } from './edge-stats.js';
import type { PendingResponses } from './pending-responses.js';

/**
 * What the stream saw of the response when it ended: all of it (`complete`), the headers and
 * no body messages because the body mode is NONE (`headers-only`), less of a response that
 * was coming through it (`cut`), or nothing, with body mode NONE: Envoy may not be sending
 * the response to the router at all (`unseen`).
 */
export type ResponseEnd = 'complete' | 'headers-only' | 'cut' | 'unseen';

/** What the stream learnt of the response (status, served-by, the engine's usage). */
export type ResponseFacts = Omit<RequestOutcome, 'aborted'>;

/** One routed request's completion, from the decision on. */
export interface TicketCompletion {
  /** Key for the decision metadata (`cacheroute.ticket`) when Envoy's access log may end the request. */
  readonly key: string | undefined;
  /** Asked once the request side is answered: may the stream end now (nothing after it is needed)? */
  releaseAfterRequest(): boolean;
  /** The response completed, or the stream ended. Called at most once. */
  end(how: ResponseEnd, facts: ResponseFacts): void;
}

export interface CompletionMode {
  /**
   * Takes charge of a routed request's ticket. `streamCarriesResponse`: Envoy said it sends
   * this stream the response body (protocol_config response_body_mode other than NONE).
   */
  begin(ticket: RouteTicket, streamCarriesResponse: boolean): TicketCompletion;
}

/** `ext-proc`: the stream that carried the request reports its end. */
export class ResponsePathCompletion implements CompletionMode {
  constructor(private readonly stats: EdgeStats) {}

  begin(ticket: RouteTicket): TicketCompletion {
    const stats = this.stats;
    return {
      key: undefined,
      releaseAfterRequest: () => false,
      end(how, facts) {
        const aborted = how === 'cut' || how === 'unseen';
        if (aborted) stats.streamError('ABORTED');
        ticket.finish({ aborted, ...facts });
      },
    };
  }
}

/** `access-log`: Envoy's access log entry reports the end (pending-responses.ts). */
export class AccessLogCompletion implements CompletionMode {
  constructor(private readonly pending: PendingResponses) {}

  begin(ticket: RouteTicket, streamCarriesResponse: boolean): TicketCompletion {
    const pending = this.pending;
    const key = pending.hold(ticket);
    return {
      key,
      releaseAfterRequest: () => !streamCarriesResponse || pending.accessLog !== 'absent',
      end(how, facts) {
        if (how === 'complete') return pending.finishFromStream(key, { aborted: false, ...facts });
        const log = pending.accessLog;
        if (log === 'present') return; // the log reports how it ended
        if (log === 'unknown') return pending.awaitLog(key);
        // Absent: the stream was the signal (a stream that carried no response ended unseen).
        pending.finishFromStream(key, { aborted: how === 'cut', ...facts });
      },
    };
  }
}
