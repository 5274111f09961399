/**
 * Router replicas sharing state inside the simulator: the project's replication layer
 * (src/replication/) with NATS replaced by a delayed in-sim transport on virtual time.
 *
 * Each replica gets what the composition root gives it when `replication.enabled` is set: a
 * PeerLoadTable as the data layer's fleet load source, the LoadShare (its own per-engine
 * contribution out, the peers' reports in) and, when the graph has an approximate
 * `prefix-cache` index and `replication.index.enabled`, the IndexShare (local index changes
 * batched in its outbox, batches applied in stream order, its own included). The messages are
 * the wire codec's bytes, encoded and decoded by that code; only the carrying is modelled:
 *  - load reports: every `load.intervalMs` (± nothing: the timer is the replica's own), each
 *    report reaches every other replica `delayMs` later (core NATS: fan-out, no echo);
 *  - index batches: every `index.flushIntervalMs` the outbox is flushed into one stream;
 *    every replica, the publisher too, reads each batch `delayMs` after it was published, so
 *    all read the stream in the same order (JetStream).
 * Why one delay for both: it is the replication hop (publish, server, delivery) the study
 * varies; NATS outages are the real-time `replicas` preset's job, not this one's.
 *
 * Not modelled: completion forwarding (each replica hears its own tickets' ends from its own
 * access log stream), and the replay on start (every replica starts with the run, empty).
 */
import { silentLogger } from '../logging/logger.js';
import { PREFIX_INDEX_REPLICA } from '../plugins/multi/prefix-index-replica.js';
import { IndexShare } from '../replication/index-share.js';
import { LoadShare } from '../replication/load-share.js';
import { PeerLoadTable } from '../replication/peer-load.js';
import type { ReplicationOptions } from '../replication/replication-config.js';
import type { Scheduler } from '../scheduling/scheduler.js';
import type { VirtualTime } from './virtual-time.js';

/** One replica's end of the link, built before its scheduler (the peer table is a load source of it). */
export interface ReplicaEnd {
  readonly peers: PeerLoadTable;
}

export interface ReplicaLinkStats {
  readonly loadReports: number;
  readonly indexBatches: number;
  /** Other replicas' index changes applied, summed over replicas. */
  readonly changesApplied: number;
  readonly dropped: number;
}

interface Member {
  readonly load: LoadShare;
  readonly index: IndexShare | undefined;
}

export class ReplicaLink {
  private readonly members: Member[] = [];
  private loadReports = 0;
  private indexBatches = 0;

  constructor(
    private readonly time: VirtualTime,
    private readonly options: ReplicationOptions,
    private readonly delayMs: number,
  ) {}

  /** The peer table a replica's scheduler is built with (createScheduler's fleetLoadSources). */
  newEnd(): ReplicaEnd {
    return { peers: new PeerLoadTable(this.options.load.peerTimeoutMs) };
  }

  /** Joins replica `scheduler` (built with `end.peers`) to the link and starts its timers. */
  join(end: ReplicaEnd, scheduler: Scheduler): void {
    const id = `sim-replica-${this.members.length}`;
    const prefix = this.options.subjectPrefix;
    const tokenLoad = scheduler.dataLayer?.tokenLoad;
    const load = new LoadShare({
      replicaId: id,
      subject: `${prefix}.load`,
      intervalMs: this.options.load.intervalMs,
      registry: scheduler.registry,
      ...(tokenLoad !== undefined ? { tokenLoad } : {}),
      peers: end.peers,
      clock: this.time,
      logger: silentLogger,
    });
    const replicaIndex = scheduler.service(PREFIX_INDEX_REPLICA);
    const index =
      this.options.index.enabled && replicaIndex !== undefined
        ? new IndexShare({
            replicaId: id,
            subject: `${prefix}.index`,
            settings: this.options.index,
            reconnectWaitMs: this.options.reconnectWaitMs,
            index: replicaIndex,
            clock: this.time,
            logger: silentLogger,
          })
        : undefined;
    const self: Member = { load, index };
    this.members.push(self);
    if (this.options.load.enabled) this.every(this.options.load.intervalMs, () => this.sendLoad(self));
    if (index !== undefined) {
      index.observeLocal();
      this.every(this.options.index.flushIntervalMs, () => index.flushTo((bytes) => this.sendIndex(bytes)));
    }
  }

  stats(): ReplicaLinkStats {
    let applied = 0;
    let dropped = 0;
    for (const m of this.members) {
      const s = m.index?.stats();
      if (s === undefined) continue;
      applied += s.changesApplied;
      dropped += s.dropped.malformed + s.dropped['block-size'] + s.dropped['unknown-endpoint'] + s.dropped['outbox-full'];
    }
    return { loadReports: this.loadReports, indexBatches: this.indexBatches, changesApplied: applied, dropped };
  }

  private sendLoad(from: Member): void {
    const bytes = from.load.tickReport();
    this.loadReports++;
    for (const m of this.members) if (m !== from) this.time.schedule(this.delayMs, () => m.load.receive(bytes));
  }

  /** One batch into the stream: every member (the publisher too) reads it after the hop, in publish order. */
  private sendIndex(bytes: Uint8Array): void {
    this.indexBatches++;
    this.time.schedule(this.delayMs, () => {
      for (const m of this.members) m.index?.receive(bytes);
    });
  }

  private every(intervalMs: number, fn: () => void): void {
    const tick = (): void => {
      fn();
      this.time.schedule(intervalMs, tick);
    };
    this.time.schedule(intervalMs, tick);
  }
}
