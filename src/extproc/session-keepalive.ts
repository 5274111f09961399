/**
 * Server-side HTTP/2 keepalive for one connection: every `timeMs` without a PING in flight,
 * send a PING; if its ACK does not come back within `timeoutMs`, the peer (or the path to
 * it) is dead and the connection is destroyed, which cancels its streams and so releases
 * their in-flight accounting. Without it a silently vanished Envoy (host gone, no FIN)
 * would hold its streams' tickets until the kernel gave up on the socket, hours later.
 * Same semantics and defaults as gRPC servers' keepalive_time / keepalive_timeout.
 */
import type { Http2Session } from 'node:http2';

export interface KeepaliveOptions {
  /** Interval between PINGs; 0 turns keepalive off. */
  readonly timeMs: number;
  /** How long to wait for a PING's ACK before destroying the connection. */
  readonly timeoutMs: number;
}

/** Starts keepalive on `session`; returns the function that stops it (also on session close). */
export function startSessionKeepalive(session: Http2Session, opts: KeepaliveOptions, onDead: () => void): () => void {
  if (opts.timeMs <= 0) return () => {};
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const stop = (): void => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const dead = (): void => {
    if (stopped) return;
    stop();
    onDead();
    if (!session.destroyed) session.destroy();
  };
  const schedule = (): void => {
    timer = setTimeout(sendPing, opts.timeMs);
    timer.unref();
  };
  function sendPing(): void {
    if (stopped || session.destroyed || session.closed) return stop();
    let acked = false;
    const deadline = setTimeout(() => {
      if (!acked) dead();
    }, opts.timeoutMs);
    deadline.unref();
    timer = deadline;
    let sent: boolean;
    try {
      sent = session.ping((err) => {
        acked = true;
        clearTimeout(deadline);
        if (stopped) return;
        if (err !== null) return dead();
        schedule();
      });
    } catch {
      sent = false;
    }
    if (!sent) {
      clearTimeout(deadline);
      dead();
    }
  }
  session.once('close', stop);
  schedule();
  return stop;
}
