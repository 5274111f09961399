/**
 * Load sharing: every `intervalMs` this replica publishes its own per-engine contribution
 * (router-side in-flight and prefilling counts, prompt tokens, the token-load model's
 * pending tokens: never the peers' numbers it merged in) on `<prefix>.load` (core NATS, no
 * persistence: a report is only worth its interval), and takes the others' reports into the
 * PeerLoadTable. On the same tick the table drops silent peers and rebuilds its sums.
 *
 * While NATS is away nothing is published and the peers' numbers are dropped at once: this
 * replica routes on its own accounting until the link is back.
 */
import type { NatsConnection, Subscription } from 'nats';
import type { TokenLoadModel } from '../datalayer/token-load-model.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { Logger } from '../logging/logger.js';
import type { Clock } from '../util/clock.js';
import type { PeerLoadTable } from './peer-load.js';
import { decodeLoadReport, encodeLoadReport, type EndpointLoadShare } from './wire-codec.js';

export interface LoadShareOptions {
  readonly replicaId: string;
  readonly subject: string;
  readonly intervalMs: number;
  readonly registry: EndpointRegistry;
  /** The data layer's token-load model (pending tokens per engine); absent = prompt tokens. */
  readonly tokenLoad?: TokenLoadModel;
  readonly peers: PeerLoadTable;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface LoadShareStats {
  readonly reportsPublished: number;
  readonly reportsReceived: number;
  readonly reportsDropped: number;
}

export class LoadShare {
  private timer: NodeJS.Timeout | undefined;
  private nc: NatsConnection | undefined;
  private sub: Subscription | undefined;
  private published = 0;
  private received = 0;
  private dropped = 0;

  constructor(private readonly opts: LoadShareOptions) {}

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.sub?.unsubscribe();
    this.sub = undefined;
    this.nc = undefined;
    this.opts.peers.clear();
  }

  /** Link up: subscribe on a new connection (subscriptions survive the client's own reconnects). */
  up(nc: NatsConnection, fresh: boolean): void {
    this.nc = nc;
    if (!fresh && this.sub !== undefined) return;
    this.sub?.unsubscribe();
    this.sub = nc.subscribe(this.opts.subject, {
      callback: (err, msg) => {
        if (err === null) this.receive(msg.data);
      },
    });
    this.publish();
  }

  /** Takes one received load report (from any transport): decoded, own echoes skipped, into the peer table. */
  receive(data: Uint8Array): void {
    const r = decodeLoadReport(data);
    if (r === undefined) {
      this.dropped++;
      return;
    }
    if (r.replicaId === this.opts.replicaId) return;
    this.received++;
    this.opts.peers.ingest(r, this.opts.clock.nowMs());
  }

  /**
   * One load interval's work without a timer or NATS (for a transport that keeps its own
   * time, e.g. the fleet simulator's): drops silent peers, then returns the report to publish.
   */
  tickReport(): Uint8Array {
    this.opts.peers.refresh(this.opts.clock.nowMs());
    this.published++;
    return this.report();
  }

  /** This replica's own contribution, encoded as it goes on the wire. */
  report(): Uint8Array {
    return encodeLoadReport({ replicaId: this.opts.replicaId, endpoints: this.ownShare() });
  }

  down(): void {
    this.nc = undefined;
    this.opts.peers.clear();
  }

  /** This replica's own contribution per engine (what it publishes). */
  ownShare(): EndpointLoadShare[] {
    const { registry, tokenLoad } = this.opts;
    const out: EndpointLoadShare[] = [];
    for (const e of registry.all()) {
      const inflight = registry.inflight.requests(e.index);
      if (inflight === 0) continue;
      const prompt = registry.inflight.promptTokens(e.index);
      out.push({
        endpointId: e.id,
        inflightRequests: inflight,
        prefillingRequests: registry.inflight.prefillingRequests(e.index),
        inflightPromptTokens: prompt,
        pendingTokens: tokenLoad !== undefined ? tokenLoad.pendingTokens(e.id) : prompt,
      });
    }
    return out;
  }

  stats(): LoadShareStats {
    return { reportsPublished: this.published, reportsReceived: this.received, reportsDropped: this.dropped };
  }

  private tick(): void {
    this.opts.peers.refresh(this.opts.clock.nowMs());
    this.publish();
  }

  private publish(): void {
    const nc = this.nc;
    if (nc === undefined || nc.isClosed()) return;
    try {
      nc.publish(this.opts.subject, this.report());
      this.published++;
    } catch (err) {
      this.opts.logger.debug('replication: load report not published', { error: String(err) });
    }
  }
}
