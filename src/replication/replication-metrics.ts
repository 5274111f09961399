/**
 * Prometheus metrics of replica state sharing, read from the service's stats at scrape time:
 *
 *   cacheroute_replication_connected                       1 while this replica has NATS
 *   cacheroute_replication_peers                           replicas with a fresh load report
 *   cacheroute_replication_load_reports_total{direction}   published | received
 *   cacheroute_replication_index_changes_total{direction}  published | applied (others' changes)
 *   cacheroute_replication_index_dropped_total{reason}     malformed | block-size | unknown-endpoint | outbox-full
 *   cacheroute_replication_index_outbox_bytes              unpublished batches held (NATS away)
 *   cacheroute_replication_replay_pending                  stream messages not yet applied (replay / catch-up)
 *   cacheroute_replication_replay_caught_up                1 once the replay reached the stream's end
 *   cacheroute_replication_replay_last_catchup_seconds     consumer (re)start → caught up, last time
 *   cacheroute_replication_completions_forwarded_total{direction}  out (sent to owners) | in (finished here)
 *   cacheroute_replication_completions_dropped_total{reason}  owner-gone | outbox-full | malformed | unknown-ticket | not-owner
 *   cacheroute_replication_completions_outbox               completions waiting for NATS
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ReplicationStats } from './replication-service.js';

export interface ReplicationView {
  stats(): ReplicationStats;
}

export function registerReplicationMetrics(registry: Registry, view: ReplicationView): void {
  const registers = [registry];
  const gauge = (name: string, help: string, value: (s: ReplicationStats) => number | undefined): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.reset();
        const v = value(view.stats());
        if (v !== undefined) this.set(v);
      },
    });
  };
  gauge('cacheroute_replication_connected', '1 while this replica is connected to NATS (0: routing on its own state).', (s) =>
    s.connected ? 1 : 0,
  );
  gauge('cacheroute_replication_peers', 'Other replicas whose load report is fresh.', (s) => s.peers.length);
  gauge(
    'cacheroute_replication_index_outbox_bytes',
    'Index batches waiting to be published (NATS away or slow).',
    (s) => s.index?.outbox.queuedBytes,
  );
  gauge('cacheroute_replication_replay_pending', 'Index stream messages up to the replay target not yet applied.', (s) =>
    s.index !== undefined ? Math.max(0, s.index.replay.targetSeq - s.index.replay.appliedSeq) : undefined,
  );
  gauge('cacheroute_replication_replay_caught_up', '1 once the index replay (or catch-up after an outage) reached its target.', (s) =>
    s.index !== undefined ? (s.index.replay.caughtUp ? 1 : 0) : undefined,
  );
  gauge('cacheroute_replication_replay_last_catchup_seconds', 'Time from the index consumer (re)start to caught up, the last time.', (s) =>
    s.index?.replay.lastCatchUpMs !== undefined ? s.index.replay.lastCatchUpMs / 1000 : undefined,
  );
  gauge(
    'cacheroute_replication_completions_outbox',
    "Completions of other replicas' tickets waiting for NATS.",
    (s) => s.completions?.outboxEntries,
  );
  const counter = (
    name: string,
    help: string,
    label: string,
    values: (s: ReplicationStats) => Readonly<Record<string, number>> | undefined,
  ): void => {
    new Counter({
      name,
      help,
      labelNames: [label],
      registers,
      collect() {
        this.reset();
        for (const [k, v] of Object.entries(values(view.stats()) ?? {})) this.inc({ [label]: k }, v);
      },
    });
  };
  counter('cacheroute_replication_load_reports_total', 'Load reports this replica published and received from peers.', 'direction', (s) =>
    s.load !== undefined ? { published: s.load.reportsPublished, received: s.load.reportsReceived } : undefined,
  );
  counter(
    'cacheroute_replication_index_changes_total',
    "Index changes this replica published, and other replicas' changes it applied.",
    'direction',
    (s) => (s.index !== undefined ? { published: s.index.changesPublished, applied: s.index.changesApplied } : undefined),
  );
  counter('cacheroute_replication_index_dropped_total', 'Index changes dropped, by reason.', 'reason', (s) => s.index?.dropped);
  counter(
    'cacheroute_replication_completions_forwarded_total',
    "Access-log completions sent to their ticket's owner (out) and received and finished here (in).",
    'direction',
    (s) => (s.completions !== undefined ? { out: s.completions.forwardedOut, in: s.completions.forwardedIn } : undefined),
  );
  counter(
    'cacheroute_replication_completions_dropped_total',
    'Forwarded completions dropped, by reason.',
    'reason',
    (s) => s.completions?.dropped,
  );
}
