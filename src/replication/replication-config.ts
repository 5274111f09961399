/**
 * Settings of router-replica state sharing over NATS (src/replication/), with their
 * defaults, and the `replication:` config section's schema that validates a document
 * against them.
 */
import type { z } from 'zod';
import { ALWAYS, bool, int, listOf, oneOf, optionalSection, str } from '../util/schema.js';

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

const natsUrl = str({ pattern: /^(nats|tls):\/\/[A-Za-z0-9.\-_[\]:]+(:[0-9]{1,5})?$/, what: 'a NATS URL like nats://127.0.0.1:4222' });

const D = DEFAULT_REPLICATION;

/** The `replication:` section: every field documented, defaults applied. */
export const replicationSchema = optionalSection({
  enabled: bool().default(D.enabled).describe('Share load and prefix-index state with the other replicas over NATS.'),
  servers: listOf(natsUrl, { minItems: 1, unique: true })
    .default([...D.servers])
    .describe('NATS server URLs.'),
  subjectPrefix: str({ pattern: /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, what: 'NATS subject tokens like cacheroute or prod.cacheroute' })
    .default(D.subjectPrefix)
    .describe('Subjects <prefix>.load and <prefix>.index; replicas sharing state use the same prefix.'),
  replicaId: str({ pattern: /^[A-Za-z0-9._:-]{0,128}$/, what: 'up to 128 of A-Z a-z 0-9 . _ : -' })
    .default(D.replicaId)
    .describe('Name on the wire; empty = <hostname>-<pid>-<random>, new on every start.'),
  connectTimeoutMs: int({ min: 100, max: 60_000 }).default(D.connectTimeoutMs),
  reconnectWaitMs: int({ min: 50, max: 60_000 }).default(D.reconnectWaitMs),
  load: optionalSection({
    enabled: bool().default(D.load.enabled).describe('Share per-engine in-flight counts and token load.'),
    intervalMs: int({ min: 20, max: 10_000 }).default(D.load.intervalMs).describe('How often this replica publishes its load.'),
    peerTimeoutMs: int({ min: 50, max: 120_000 }).default(D.load.peerTimeoutMs).describe("A peer's load older than this is dropped."),
  }).superRefine((l, ctx) => {
    if (typeof l.intervalMs === 'number' && typeof l.peerTimeoutMs === 'number' && l.peerTimeoutMs < 2 * l.intervalMs) {
      ctx.addIssue({ code: 'custom', path: ['peerTimeoutMs'], message: `must be at least 2 × intervalMs (${2 * l.intervalMs})` });
    }
  }, ALWAYS),
  completions: optionalSection({
    enabled: bool()
      .default(D.completions.enabled)
      .describe("Forward access-log completions of other replicas' tickets to their owner (a load-balanced access log stream needs it)."),
    orphanAgeMs: int({ min: 1000, max: 24 * 3_600_000 })
      .default(D.completions.orphanAgeMs)
      .describe(
        'A ticket alive when completions were lost (NATS away, a peer vanished) counts as aborted this long after (at most server.responseIdleTimeoutMs).',
      ),
    maxOutboxEntries: int({ min: 0, max: 10_000_000 })
      .default(D.completions.maxOutboxEntries)
      .describe('Completions kept for their owners while NATS is away.'),
    peerCheckIntervalMs: int({ min: 20, max: 60_000 })
      .default(D.completions.peerCheckIntervalMs)
      .describe('How often vanished peers are looked for.'),
    lossyGraceMs: int({ min: 0, max: 600_000 })
      .default(D.completions.lossyGraceMs)
      .describe('After a peer vanished or NATS came back, tickets held this long more are at risk too (Envoy moving its log stream).'),
  }),
  index: optionalSection({
    enabled: bool().default(D.index.enabled).describe('Share approximate prefix-index changes (prefix-cache plugin only).'),
    stream: str({ pattern: /^[A-Za-z0-9_-]{1,64}$/, what: 'a JetStream stream name (A-Z a-z 0-9 _ -)' }).default(D.index.stream),
    maxAgeMs: int({ min: 1000, max: 7 * 86_400_000 })
      .default(D.index.maxAgeMs)
      .describe('Stream max age: how long a delta is worth replaying.'),
    maxBytes: int({ min: 1024 * 1024, max: 64 * 1024 * 1024 * 1024 }).default(D.index.maxBytes),
    storage: oneOf(['file', 'memory']).default(D.index.storage),
    streamReplicas: int({ min: 1, max: 5 }).default(D.index.streamReplicas),
    flushIntervalMs: int({ min: 5, max: 10_000 }).default(D.index.flushIntervalMs),
    maxBatchChanges: int({ min: 1, max: 10_000 }).default(D.index.maxBatchChanges),
    maxOutboxBytes: int({ min: 64 * 1024, max: 1024 * 1024 * 1024 }).default(D.index.maxOutboxBytes),
    replayWaitMs: int({ min: 0, max: 600_000 })
      .default(D.index.replayWaitMs)
      .describe('Start waits this long for the replay before reporting ready.'),
  }),
});

export type ReplicationSection = z.output<typeof replicationSchema>;
