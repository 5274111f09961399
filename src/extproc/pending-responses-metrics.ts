/**
 * Prometheus metrics of access-log completion (pending-responses.ts), read at scrape time:
 *
 *   cacheroute_pending_responses                       tickets waiting for their access log entry
 *   cacheroute_pending_responses_at_risk               of those, alive when completions were lost (expire after the orphan age)
 *   cacheroute_pending_responses_finished_total{how}   completed | expired (route timeout) | orphaned (orphan age)
 *   cacheroute_pending_responses_unknown_total         entries naming a ticket of this replica it no longer holds
 *   cacheroute_completion_path_lossy                   1 while completions cannot reach this replica (NATS away)
 *   cacheroute_access_log_entries_total{kind}          unrouted | forwarded (another replica's ticket, sent to it)
 *                                                      | foreign (another replica's ticket, no replication: ignored)
 *   cacheroute_access_log_untimed_total                routed entries without the first-body tag (no first-token time
 *                                                      for a TTFT model: the logger is not configured with it)
 *
 * `foreign` > 0 flags a load-balanced access log stream without completion forwarding:
 * those requests stay in flight on their owner until server.responseIdleTimeoutMs.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PendingResponsesStats } from './pending-responses.js';
import type { AccessLogReceiverStats } from './access-log-receiver.js';

export interface PendingResponsesView {
  snapshot(): PendingResponsesStats;
  lossy(): boolean;
  accessLog?(): AccessLogReceiverStats | undefined;
}

export function registerPendingResponseMetrics(registry: Registry, view: PendingResponsesView): void {
  const registers = [registry];
  const gauge = (name: string, help: string, value: () => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(value());
      },
    });
  };
  gauge('cacheroute_pending_responses', 'Routed requests waiting for their access log entry.', () => view.snapshot().pending);
  gauge(
    'cacheroute_pending_responses_at_risk',
    'Pending requests alive when completions were lost; they count as aborted after the orphan age.',
    () => view.snapshot().atRisk,
  );
  gauge('cacheroute_completion_path_lossy', '1 while completions cannot reach this replica (NATS away); 0 otherwise.', () =>
    view.lossy() ? 1 : 0,
  );
  new Counter({
    name: 'cacheroute_pending_responses_finished_total',
    help: 'Pending requests finished: by their access log entry (completed), after the route timeout (expired), after the orphan age (orphaned), by what their own stream saw (stream), or after waiting for an access log that never came (unconfirmed).',
    labelNames: ['how'],
    registers,
    collect() {
      this.reset();
      const s = view.snapshot();
      this.inc({ how: 'completed' }, s.completed);
      this.inc({ how: 'expired' }, s.expired);
      this.inc({ how: 'orphaned' }, s.orphaned);
      this.inc({ how: 'stream' }, s.byStream);
      this.inc({ how: 'unconfirmed' }, s.unconfirmed);
    },
  });
  const states = ['present', 'unknown', 'absent'] as const;
  new Gauge({
    name: 'cacheroute_access_log_state',
    help: "1 for the state of Envoy's access log as this replica sees it: present (an entry named one of its tickets), unknown (none yet) or absent (none came in time; tickets end with their streams).",
    labelNames: ['state'],
    registers,
    collect() {
      const now = view.snapshot().accessLog;
      for (const state of states) this.set({ state }, state === now ? 1 : 0);
    },
  });
  new Counter({
    name: 'cacheroute_pending_responses_unknown_total',
    help: 'Completions naming a ticket of this replica that it no longer holds (finished, expired or a duplicate).',
    registers,
    collect() {
      this.reset();
      this.inc(view.snapshot().unknown);
    },
  });
  new Counter({
    name: 'cacheroute_access_log_entries_total',
    help: "Access log entries not finishing one of this replica's tickets: unrouted, forwarded to the ticket's owner, or foreign (another replica's ticket with no forwarding: ignored).",
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      const a = view.accessLog?.();
      if (a === undefined) return;
      this.inc({ kind: 'unrouted' }, a.unrouted);
      this.inc({ kind: 'forwarded' }, a.forwarded);
      this.inc({ kind: 'foreign' }, a.foreign);
    },
  });
  new Counter({
    name: 'cacheroute_access_log_untimed_total',
    help: 'Routed access log entries without the cacheroute.first_body_us tag: the logger is not configured with it, so a TTFT model learns no first-token time from them.',
    registers,
    collect() {
      this.reset();
      const a = view.accessLog?.();
      if (a !== undefined) this.inc(a.untimed);
    },
  });
}
