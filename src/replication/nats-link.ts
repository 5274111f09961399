/**
 * This replica's connection to NATS, kept up for the life of the service: the first
 * connection is retried every `reconnectWaitMs` until it succeeds (a router starts and
 * routes whether or not NATS is there), and once connected the client reconnects on its
 * own, forever. Listeners hear "up" (with the connection) and "down"; `connected` is what
 * the metric reports.
 */
import { connect, Events, type NatsConnection } from 'nats';
import type { Logger } from '../logging/logger.js';
import { abortableSleep } from '../util/abortable-sleep.js';

export interface NatsLinkOptions {
  readonly servers: readonly string[];
  readonly name: string;
  readonly connectTimeoutMs: number;
  readonly reconnectWaitMs: number;
  readonly logger: Logger;
}

export interface NatsLinkListener {
  /** Connected (first time, or back after an outage); `fresh` = a new connection object. */
  up(nc: NatsConnection, fresh: boolean): void;
  down(): void;
}

export class NatsLink {
  private nc: NatsConnection | undefined;
  private isUp = false;
  private ups = 0;
  private downs = 0;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private firstUp: (() => void) | undefined;
  private readonly firstUpPromise: Promise<void>;

  constructor(
    private readonly opts: NatsLinkOptions,
    private readonly listener: NatsLinkListener,
  ) {
    this.firstUpPromise = new Promise((resolve) => (this.firstUp = resolve));
  }

  get connected(): boolean {
    return this.isUp;
  }

  get connection(): NatsConnection | undefined {
    return this.isUp ? this.nc : undefined;
  }

  /** Times connected (first connection and every reconnect) and disconnected. */
  counts(): { readonly connects: number; readonly disconnects: number } {
    return { connects: this.ups, disconnects: this.downs };
  }

  /** Starts connecting; resolves once connected or after `waitMs`, whichever is first. */
  async start(waitMs: number): Promise<void> {
    this.loop ??= this.run();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.firstUpPromise, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.firstUp?.();
    const nc = this.nc;
    if (nc !== undefined && !nc.isClosed()) await nc.close().catch(() => {});
    await this.loop;
    this.setDown();
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let logged = false;
    while (!signal.aborted) {
      let nc: NatsConnection;
      try {
        nc = await connect({
          servers: [...this.opts.servers],
          name: this.opts.name,
          timeout: this.opts.connectTimeoutMs,
          reconnect: true,
          maxReconnectAttempts: -1,
          reconnectTimeWait: this.opts.reconnectWaitMs,
          reconnectJitter: Math.min(100, this.opts.reconnectWaitMs),
          pingInterval: 2000,
          maxPingOut: 2,
          noEcho: true,
        });
      } catch (err) {
        if (!logged) this.opts.logger.warn("NATS not reachable; routing on this replica's own state, retrying", { error: String(err) });
        logged = true;
        await abortableSleep(this.opts.reconnectWaitMs, signal);
        continue;
      }
      if (signal.aborted) {
        await nc.close().catch(() => {});
        break;
      }
      logged = false;
      this.nc = nc;
      this.setUp(nc, true);
      this.opts.logger.info('NATS connected', { server: nc.getServer() });
      const statuses = (async () => {
        for await (const s of nc.status()) {
          if (s.type === Events.Disconnect) {
            this.opts.logger.warn("NATS connection lost; routing on this replica's own state");
            this.setDown();
          } else if (s.type === Events.Reconnect) {
            this.opts.logger.info('NATS reconnected', { server: nc.getServer() });
            this.setUp(nc, false);
          }
        }
      })().catch(() => {});
      await nc.closed();
      await statuses;
      this.setDown();
      if (!signal.aborted) await abortableSleep(this.opts.reconnectWaitMs, signal);
    }
  }

  private setUp(nc: NatsConnection, fresh: boolean): void {
    this.isUp = true;
    this.ups++;
    this.firstUp?.();
    try {
      this.listener.up(nc, fresh);
    } catch (err) {
      this.opts.logger.warn('replication: connect handler failed', { error: String(err) });
    }
  }

  private setDown(): void {
    if (!this.isUp) return;
    this.isUp = false;
    this.downs++;
    try {
      this.listener.down();
    } catch (err) {
      this.opts.logger.warn('replication: disconnect handler failed', { error: String(err) });
    }
  }
}
