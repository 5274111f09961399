/**
 * Prometheus series of the precise prefix index (engine KV events and router-side
 * tokenization), read from the subscriber's, index's and tokenizers' own counters at scrape
 * time, except the two histograms, which are recorded where they happen (per message, per
 * request) into typed-array cells (hot-path-histogram.ts):
 *
 *   cacheroute_kv_event_messages_total{endpoint}                  messages received and applied
 *   cacheroute_kv_events_total{endpoint,type}                     block_stored | block_removed | all_blocks_cleared
 *   cacheroute_kv_event_ignored_total{endpoint}                   events of another tier or KV-cache group
 *   cacheroute_kv_event_resyncs_total{endpoint,reason}            gap | disconnect | overflow | decode_error | ledger_full
 *   cacheroute_kv_event_dropped_messages_total{endpoint}          messages thrown away unapplied (full queue, disconnect)
 *   cacheroute_kv_event_subscriber_connected{endpoint}            1 while the ZMQ socket is connected
 *   cacheroute_kv_event_queue_messages{endpoint}                  received, not yet applied
 *   cacheroute_kv_event_lag_seconds{endpoint}                     histogram: router wall clock − the batch's engine timestamp
 *   cacheroute_precise_index_blocks{endpoint}                     engine blocks the router tracks (keyed or not)
 *   cacheroute_precise_index_unmatchable_blocks{endpoint}         of those, blocks no request can match (extra keys, unknown parent)
 *   cacheroute_precise_index_synced{endpoint}                     1 when the endpoint's entries are complete (synced), else 0
 *   cacheroute_precise_speculative_entries                        hybrid mode's speculative blocks
 *   cacheroute_precise_tokenization_seconds{model}                histogram: render + tokenize + key one request
 *   cacheroute_precise_tokenization_failures_total                requests the chat template rejected
 *   cacheroute_tokenizer_cache_lookups_total{model,cache,result}  cache: piece | pre_token | key_memo; result: hit | miss
 *
 * Labels are bounded: `endpoint` is an endpoint the router subscribes to (configured or
 * discovered), `model` a configured tokenizer model. No prompt text.
 */
import { Counter, Gauge, type Metric, type Registry } from 'prom-client';
import { HotPathHistogram } from '../util/hot-path-histogram.js';
import type { EngineLedgerStats } from '../precise-index/event-fed-index.js';
import type { TokenizationCost } from '../precise-index/precise-affinity.js';
import type { TokenizerCacheStats } from '../tokenization/model-tokenizer.js';
import { serviceKey } from '../framework/plugin-api.js';
import type { KvStreamStats } from './kv-event-subscriber.js';

/** Lag buckets in seconds: 1 ms … 30 s. */
export const KV_LAG_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;
/** Tokenization cost buckets in seconds: 10 µs … 250 ms. */
export const TOKENIZATION_BUCKETS = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
] as const;

export const RESYNC_REASONS = ['gap', 'disconnect', 'overflow', 'decode_error', 'ledger_full'] as const;

/** What the series read: one precise-prefix-cache instance (the first that starts in a precise mode). */
export interface PreciseIndexMetricsView {
  readonly lagSeconds: HotPathHistogram<'endpoint'>;
  readonly tokenizationSeconds: HotPathHistogram<'model'>;
  streams(): readonly KvStreamStats[];
  engines(): readonly (EngineLedgerStats & { readonly endpointId: string })[];
  speculativeEntries(): number;
  cost(): TokenizationCost | undefined;
  tokenizerCaches(): readonly { readonly model: string; readonly stats: TokenizerCacheStats }[];
}

/** Where the plugin publishes its view for the app's telemetry (a scheduler-wide service). */
export interface PreciseIndexMetricsSlot {
  view: PreciseIndexMetricsView | undefined;
}
export const PRECISE_INDEX_METRICS = serviceKey<PreciseIndexMetricsSlot>('precise-index-metrics');

export function kvLagHistogram(): HotPathHistogram<'endpoint'> {
  return new HotPathHistogram(
    'cacheroute_kv_event_lag_seconds',
    'KV event lag: router wall clock minus the engine timestamp of each applied message.',
    'endpoint',
    KV_LAG_BUCKETS,
    [],
  );
}

export function tokenizationHistogram(): HotPathHistogram<'model'> {
  return new HotPathHistogram(
    'cacheroute_precise_tokenization_seconds',
    'Router-side cost of turning one request into engine block keys (chat template, tokenization, hashing).',
    'model',
    TOKENIZATION_BUCKETS,
    [],
  );
}

/** Registers the series on `registry`; they read `slot.view` at scrape time (empty until a precise mode starts). */
export function registerKvEventMetrics(registry: Registry, slot: PreciseIndexMetricsSlot): void {
  const registers = [registry];
  const streams = (): readonly KvStreamStats[] => slot.view?.streams() ?? [];
  const engines = (): ReturnType<PreciseIndexMetricsView['engines']> => slot.view?.engines() ?? [];
  /** A series with one `endpoint` label, one value per row of `rows`. */
  const perEndpoint =
    <T extends { readonly endpointId: string }>(rows: () => readonly T[]) =>
    (name: string, help: string, type: 'counter' | 'gauge', value: (s: T) => number): void => {
      const collect = function (this: Counter<'endpoint'> | Gauge<'endpoint'>): void {
        this.reset();
        for (const s of rows()) {
          if (this instanceof Counter) this.inc({ endpoint: s.endpointId }, value(s));
          else this.set({ endpoint: s.endpointId }, value(s));
        }
      };
      if (type === 'counter') new Counter({ name, help, labelNames: ['endpoint'], registers, collect });
      else new Gauge({ name, help, labelNames: ['endpoint'], registers, collect });
    };
  const perStream = perEndpoint(streams);
  const perEngine = perEndpoint(engines);
  /** A counter whose label sets and values `rows` lists at scrape time. */
  const counter = (
    name: string,
    help: string,
    labelNames: readonly string[],
    rows: () => Iterable<readonly [Record<string, string>, number]>,
  ): void => {
    new Counter({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        for (const [labels, v] of rows()) this.inc(labels, v);
      },
    });
  };

  perStream('cacheroute_kv_event_messages_total', 'KV event messages received and applied, per engine.', 'counter', (s) => s.messages);
  counter('cacheroute_kv_events_total', 'KV events received, per engine and event type.', ['endpoint', 'type'], () =>
    streams().flatMap((s) => [
      [{ endpoint: s.endpointId, type: 'block_stored' }, s.events.stored] as const,
      [{ endpoint: s.endpointId, type: 'block_removed' }, s.events.removed] as const,
      [{ endpoint: s.endpointId, type: 'all_blocks_cleared' }, s.events.cleared] as const,
    ]),
  );
  perEngine(
    'cacheroute_kv_event_ignored_total',
    'KV events of another storage tier or KV-cache group (not the prefix cache a request can hit), not applied.',
    'counter',
    (s) => s.ignoredEvents,
  );
  counter(
    'cacheroute_kv_event_resyncs_total',
    "Times an engine's precise entries were dropped because its event stream could not be trusted, by reason.",
    ['endpoint', 'reason'],
    () => {
      const ledgerFull = new Map(engines().map((e) => [e.endpointId, e.ledgerOverflows]));
      return streams().flatMap((s) => {
        const by: Record<(typeof RESYNC_REASONS)[number], number> = {
          gap: s.gaps,
          disconnect: s.disconnects,
          overflow: s.overflows,
          decode_error: s.decodeErrors,
          ledger_full: ledgerFull.get(s.endpointId) ?? 0,
        };
        return RESYNC_REASONS.map((reason) => [{ endpoint: s.endpointId, reason }, by[reason]] as const);
      });
    },
  );
  perStream(
    'cacheroute_kv_event_dropped_messages_total',
    'KV event messages thrown away unapplied (queue over its bound, or queued when the socket disconnected).',
    'counter',
    (s) => s.droppedMessages,
  );
  perStream(
    'cacheroute_kv_event_subscriber_connected',
    "1 while the router's ZMQ socket to the engine's publisher is connected.",
    'gauge',
    (s) => (s.connected ? 1 : 0),
  );
  perStream('cacheroute_kv_event_queue_messages', 'KV event messages received and not yet applied.', 'gauge', (s) => s.queued);
  perEngine(
    'cacheroute_precise_index_blocks',
    'Engine KV blocks the precise index tracks for the endpoint (from its events).',
    'gauge',
    (s) => s.blocks,
  );
  perEngine(
    'cacheroute_precise_index_unmatchable_blocks',
    'Tracked blocks no request can match (extra keys, LoRA, or a parent the router never saw).',
    'gauge',
    (s) => s.unmatchableBlocks,
  );
  perEngine(
    'cacheroute_precise_index_synced',
    "1 when the endpoint's precise entries are complete; 0 before its first event and while resyncing (scored approximately).",
    'gauge',
    (s) => (s.state === 'synced' ? 1 : 0),
  );
  new Gauge({
    name: 'cacheroute_precise_speculative_entries',
    help: "Hybrid mode's speculative blocks (routed, not yet confirmed by the engine).",
    registers,
    collect() {
      this.set(slot.view?.speculativeEntries() ?? 0);
    },
  });
  counter(
    'cacheroute_precise_tokenization_failures_total',
    "Requests the router could not tokenize because the model's chat template rejected them (scored approximately).",
    [],
    () => [[{}, slot.view?.cost()?.failures ?? 0]],
  );
  counter(
    'cacheroute_tokenizer_cache_lookups_total',
    'Router-side tokenization cache lookups: piece (text between chat markers), pre_token (per word), key_memo (block keys of a cached text prefix; model "all").',
    ['model', 'cache', 'result'],
    () => {
      const v = slot.view;
      if (v === undefined) return [];
      const rows: (readonly [Record<string, string>, number])[] = [];
      for (const { model, stats } of v.tokenizerCaches()) {
        rows.push([{ model, cache: 'piece', result: 'hit' }, stats.hits], [{ model, cache: 'piece', result: 'miss' }, stats.misses]);
        if (stats.preTokens !== undefined)
          rows.push(
            [{ model, cache: 'pre_token', result: 'hit' }, stats.preTokens.hits],
            [{ model, cache: 'pre_token', result: 'miss' }, stats.preTokens.misses],
          );
      }
      const c = v.cost();
      if (c !== undefined)
        rows.push(
          [{ model: 'all', cache: 'key_memo', result: 'hit' }, c.keyMemoHits],
          [{ model: 'all', cache: 'key_memo', result: 'miss' }, c.keyMemoMisses],
        );
      return rows;
    },
  );
  // The histograms: registered once a view exists (they live in the plugin); until then empty ones.
  registry.registerMetric(
    lazyHistogram(() => slot.view?.lagSeconds, 'cacheroute_kv_event_lag_seconds', kvLagHistogram()) as unknown as Metric,
  );
  registry.registerMetric(
    lazyHistogram(
      () => slot.view?.tokenizationSeconds,
      'cacheroute_precise_tokenization_seconds',
      tokenizationHistogram(),
    ) as unknown as Metric,
  );
}

/** A histogram metric the registry renders from whichever HotPathHistogram the slot holds at scrape time. */
function lazyHistogram<L extends string>(
  get: () => HotPathHistogram<L> | undefined,
  name: string,
  empty: HotPathHistogram<string>,
): Pick<HotPathHistogram<L>, 'name' | 'help' | 'type' | 'aggregator' | 'get'> {
  return {
    name,
    help: empty.help,
    type: 'histogram',
    aggregator: 'sum',
    get: () => (get() ?? empty).get(),
  };
}
