/**
 * Prometheus metrics of endpoint discovery and config reload, read from their status at
 * scrape time (nothing is counted twice and the sources need no metrics code):
 *
 *   cacheroute_discovery_endpoints{source}                 endpoints in the source's last set
 *   cacheroute_discovery_source_synced{source}             1 once the source reported a set
 *   cacheroute_discovery_updates_total{source}             sets that differed from the previous
 *   cacheroute_discovery_errors_total{source,reason}       failed refreshes (last good set kept)
 *   cacheroute_config_reloads_total{result}                applied | rejected | unchanged
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { SOURCE_ERROR_REASONS, type SourceStatus } from './endpoint-source.js';

export const RELOAD_RESULTS = ['applied', 'rejected', 'unchanged'] as const;
export type ReloadResult = (typeof RELOAD_RESULTS)[number];

/** What the metrics read (the app's discovery service and config reloader). */
export interface DiscoveryView {
  status(): readonly SourceStatus[];
  reloads(): Readonly<Record<ReloadResult, number>>;
}

export function registerDiscoveryMetrics(registry: Registry, view: DiscoveryView): void {
  const registers = [registry];
  new Gauge({
    name: 'cacheroute_discovery_endpoints',
    help: 'Endpoints in the last set each endpoint source reported.',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      for (const s of view.status()) this.set({ source: s.name }, s.endpoints);
    },
  });
  new Gauge({
    name: 'cacheroute_discovery_source_synced',
    help: '1 once the endpoint source reported its first set.',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      for (const s of view.status()) this.set({ source: s.name }, s.synced ? 1 : 0);
    },
  });
  new Counter({
    name: 'cacheroute_discovery_updates_total',
    help: 'Endpoint sets a source reported that differed from its previous one.',
    labelNames: ['source'],
    registers,
    collect() {
      this.reset();
      for (const s of view.status()) this.inc({ source: s.name }, s.updates);
    },
  });
  new Counter({
    name: 'cacheroute_discovery_errors_total',
    help: 'Failed refreshes of an endpoint source by reason (the last good set stays in use).',
    labelNames: ['source', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const s of view.status()) for (const reason of SOURCE_ERROR_REASONS) this.inc({ source: s.name, reason }, s.errors[reason]);
    },
  });
  new Counter({
    name: 'cacheroute_config_reloads_total',
    help: 'Config reloads (file change or SIGHUP) by result; a rejected config leaves the running one in place.',
    labelNames: ['result'],
    registers,
    collect() {
      this.reset();
      const r = view.reloads();
      for (const result of RELOAD_RESULTS) this.inc({ result }, r[result]);
    },
  });
}
