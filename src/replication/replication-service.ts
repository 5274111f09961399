/**
 * Router replicas acting as one: this replica's NATS link, load sharing (load-share.ts,
 * always when enabled) and index sharing (index-share.ts, when the plugin graph has an
 * approximate `prefix-cache` index; with engine KV events each replica subscribes to
 * every engine itself and no deltas are exchanged) and, with access-log completion,
 * completion forwarding (completion-forwarding.ts: an access log entry for another
 * replica's ticket goes to its owner). Built and started by the composition
 * root (src/compose/app.ts); losing NATS never stops routing, it only narrows this replica's view
 * to its own state until the link is back.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from 'nats';
import type { TokenLoadModel } from '../datalayer/token-load-model.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { Logger } from '../logging/logger.js';
import type { PrefixIndexReplica } from '../plugins/multi/prefix-index-replica.js';
import type { Clock } from '../util/clock.js';
import { CompletionForwarding, type CompletionForwardingStats, type OwnedTickets } from './completion-forwarding.js';
import { IndexShare, type IndexShareStats } from './index-share.js';
import { LoadShare, type LoadShareStats } from './load-share.js';
import { NatsLink } from './nats-link.js';
import type { PeerLoadTable, PeerLoadStats } from './peer-load.js';
import type { ReplicationOptions } from './replication-config.js';

export interface ReplicationDeps {
  readonly registry: EndpointRegistry;
  /** The table the data layer reads peers' load from (the same object as its load source). */
  readonly peers: PeerLoadTable;
  readonly tokenLoad?: TokenLoadModel;
  /** The prefix-cache plugin's seam; absent = no approximate index to share. */
  readonly index?: PrefixIndexReplica;
  /** This replica's pending tickets (access-log completion); absent = nothing to forward. */
  readonly tickets?: OwnedTickets;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface ReplicationStats {
  readonly replicaId: string;
  readonly connected: boolean;
  readonly connects: number;
  readonly disconnects: number;
  readonly peers: readonly string[];
  readonly peerLoad: PeerLoadStats;
  readonly load?: LoadShareStats;
  /** Why index deltas are not exchanged, when they are not. */
  readonly indexSharing: 'on' | 'off (replication.index.enabled is false)' | 'off (no prefix-cache plugin in the graph)';
  readonly index?: IndexShareStats;
  /** Access-log completions forwarded to and from other replicas. */
  readonly completions?: CompletionForwardingStats;
}

/** A fresh replica id: stable for this process, new on restart. */
export function defaultReplicaId(): string {
  const host =
    hostname()
      .replace(/[^A-Za-z0-9._:-]/g, '-')
      .slice(0, 64) || 'router';
  return `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export class ReplicationService {
  readonly replicaId: string;
  private readonly link: NatsLink;
  private readonly load: LoadShare | undefined;
  private readonly index: IndexShare | undefined;
  /** Forwards other owners' completions (access-log completion with `completions.enabled`). */
  readonly completions: CompletionForwarding | undefined;
  private readonly indexSharing: ReplicationStats['indexSharing'];
  private state: 'new' | 'started' | 'stopped' = 'new';

  constructor(
    readonly options: ReplicationOptions,
    private readonly deps: ReplicationDeps,
  ) {
    this.replicaId = options.replicaId !== '' ? options.replicaId : defaultReplicaId();
    const logger = deps.logger.child({ component: 'replication', replica: this.replicaId });
    const prefix = options.subjectPrefix;
    this.load = options.load.enabled
      ? new LoadShare({
          replicaId: this.replicaId,
          subject: `${prefix}.load`,
          intervalMs: options.load.intervalMs,
          registry: deps.registry,
          ...(deps.tokenLoad !== undefined ? { tokenLoad: deps.tokenLoad } : {}),
          peers: deps.peers,
          clock: deps.clock,
          logger,
        })
      : undefined;
    if (!options.index.enabled) this.indexSharing = 'off (replication.index.enabled is false)';
    else if (deps.index === undefined) this.indexSharing = 'off (no prefix-cache plugin in the graph)';
    else this.indexSharing = 'on';
    this.index =
      this.indexSharing === 'on' && deps.index !== undefined
        ? new IndexShare({
            replicaId: this.replicaId,
            subject: `${prefix}.index`,
            settings: options.index,
            reconnectWaitMs: options.reconnectWaitMs,
            index: deps.index,
            clock: deps.clock,
            logger,
          })
        : undefined;
    this.completions =
      options.completions.enabled && deps.tickets !== undefined
        ? new CompletionForwarding({
            replicaId: this.replicaId,
            subjectPrefix: prefix,
            tickets: deps.tickets,
            ...(options.load.enabled ? { peers: deps.peers } : {}),
            maxOutboxEntries: options.completions.maxOutboxEntries,
            checkIntervalMs: options.completions.peerCheckIntervalMs,
            lossyGraceMs: options.completions.lossyGraceMs,
            logger,
          })
        : undefined;
    this.link = new NatsLink(
      {
        servers: options.servers,
        name: `cacheroute ${this.replicaId}`,
        connectTimeoutMs: options.connectTimeoutMs,
        reconnectWaitMs: options.reconnectWaitMs,
        logger,
      },
      {
        up: (nc: NatsConnection, fresh: boolean) => {
          this.load?.up(nc, fresh);
          this.index?.up(nc);
          this.completions?.up(nc, fresh);
        },
        down: () => {
          this.load?.down();
          this.index?.down();
          this.completions?.down();
        },
      },
    );
  }

  /**
   * Connects (waiting at most `connectTimeoutMs`) and, with index sharing, waits at most
   * `index.replayWaitMs` for the stream's replay, so a new replica serves warm when it can.
   * Never fails for want of NATS: the link keeps trying in the background.
   */
  async start(): Promise<void> {
    if (this.state !== 'new') return;
    this.state = 'started';
    this.load?.start();
    this.index?.start();
    this.completions?.start();
    await this.link.start(this.options.connectTimeoutMs);
    if (this.index !== undefined && this.link.connected && this.options.index.replayWaitMs > 0) {
      await this.index.waitCaughtUp(this.options.index.replayWaitMs);
    }
  }

  async stop(): Promise<void> {
    if (this.state !== 'started') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopped';
    this.load?.stop();
    this.completions?.stop();
    const index = this.index?.stop();
    await this.link.stop();
    await index;
  }

  get connected(): boolean {
    return this.link.connected;
  }

  stats(): ReplicationStats {
    const c = this.link.counts();
    return {
      replicaId: this.replicaId,
      connected: this.link.connected,
      connects: c.connects,
      disconnects: c.disconnects,
      peers: this.deps.peers.peerIds(),
      peerLoad: this.deps.peers.stats(),
      ...(this.load !== undefined ? { load: this.load.stats() } : {}),
      indexSharing: this.indexSharing,
      ...(this.index !== undefined ? { index: this.index.stats() } : {}),
      ...(this.completions !== undefined ? { completions: this.completions.stats() } : {}),
    };
  }
}
