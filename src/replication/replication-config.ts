/**
 * Settings of router-replica state sharing over NATS (src/replication/), with their
 * defaults. The `replication:` config section (src/config/sections/replication.ts)
 * validates a document against these.
 */

export interface ReplicationOptions {
  /** Off = this router acts alone (the default). */
  readonly enabled: boolean;
  /** NATS server URLs (`nats://host:port`); the client fails over between them. */
  readonly servers: readonly string[];
  /** Subjects are `<prefix>.load`, `<prefix>.index` and `<prefix>.completions.<owner>`; replicas that share state use one prefix. */
  readonly subjectPrefix: string;
  /** This replica's name on the wire; empty = `<hostname>-<pid>-<random>` (new on every start). */
  readonly replicaId: string;
  /** One connection attempt; after a failure the next one follows after `reconnectWaitMs`. */
  readonly connectTimeoutMs: number;
  readonly reconnectWaitMs: number;
  readonly load: {
    /** Share per-engine in-flight counts and token load. */
    readonly enabled: boolean;
    /** How often this replica publishes its own contribution. */
    readonly intervalMs: number;
    /** A peer's contribution older than this (receive time) is dropped: a dead replica's load vanishes. */
    readonly peerTimeoutMs: number;
  };
  readonly completions: {
    /**
     * Forward access-log completions of other replicas' tickets to their owner over NATS
     * (needed when Envoy's access log stream is load-balanced across replicas, e.g. behind
     * a Kubernetes Service; harmless with one access logger per replica).
     */
    readonly enabled: boolean;
    /** A ticket alive when the completion path lost entries expires this long after it. */
    readonly orphanAgeMs: number;
    /** Completions kept for their owners while NATS is away. */
    readonly maxOutboxEntries: number;
    /** How often the live peer set is checked for vanished replicas. */
    readonly peerCheckIntervalMs: number;
    /**
     * After a peer vanished or NATS came back, tickets held for this long more are at risk
     * too (Envoy needs a few seconds to move its log stream off a dead replica).
     */
    readonly lossyGraceMs: number;
  };
  readonly index: {
    /** Share approximate prefix-index changes (only with a `prefix-cache` plugin; see docs/replication.md). */
    readonly enabled: boolean;
    /** JetStream stream holding the deltas. */
    readonly stream: string;
    /** The stream's max age: how long a delta is worth replaying (the index lifetime). */
    readonly maxAgeMs: number;
    /** The stream's size limit (oldest deltas go first). */
    readonly maxBytes: number;
    /** JetStream storage of the stream. */
    readonly storage: 'file' | 'memory';
    /** Stream replicas in a clustered NATS (1 for a single server). */
    readonly streamReplicas: number;
    /** Local changes are batched for this long before one publish. */
    readonly flushIntervalMs: number;
    /** At most this many changes per published batch. */
    readonly maxBatchChanges: number;
    /** Unpublished batches kept while NATS is away (oldest dropped beyond it). */
    readonly maxOutboxBytes: number;
    /** Start waits this long for the replay of the stream before the router reports ready. */
    readonly replayWaitMs: number;
  };
}

export const DEFAULT_REPLICATION: ReplicationOptions = {
  enabled: false,
  servers: ['nats://127.0.0.1:4222'],
  subjectPrefix: 'cacheroute',
  replicaId: '',
  connectTimeoutMs: 2000,
  reconnectWaitMs: 500,
  load: { enabled: true, intervalMs: 200, peerTimeoutMs: 1000 },
  completions: { enabled: true, orphanAgeMs: 60_000, maxOutboxEntries: 20_000, peerCheckIntervalMs: 250, lossyGraceMs: 10_000 },
  index: {
    enabled: true,
    stream: 'CACHEROUTE_INDEX',
    maxAgeMs: 600_000,
    maxBytes: 256 * 1024 * 1024,
    storage: 'file',
    streamReplicas: 1,
    flushIntervalMs: 50,
    maxBatchChanges: 256,
    maxOutboxBytes: 8 * 1024 * 1024,
    replayWaitMs: 3000,
  },
};
