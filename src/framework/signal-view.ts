/**
 * What plugins see of the data layer (src/datalayer/data-layer.ts) through their handle:
 * how old an engine-reported figure may be, the learned output lengths, the traffic
 * statistics and, when engines are polled, their samples. The load figures themselves
 * reach plugins inside each candidate's LoadSnapshot.
 */
import type { SampleListener } from '../endpoints/engine-metrics-store.js';

export interface SignalView {
  /** Engine-reported figures older than this are not trusted (engineMetrics.staleAfterMs). */
  readonly maxMetricsAgeMs: number;
  /** Expected output tokens of a request for `model` (learned per model, capped by maxTokens). */
  expectedOutputTokens(model: string, maxTokens?: number): number;
  /** The sliding-window traffic statistics right now. */
  traffic(): TrafficSnapshot;
  /** Engine samples as they are scraped; undefined when engines are not polled. Returns unsubscribe. */
  readonly onEngineSample?: (listener: SampleListener) => () => void;
}

/** A data layer that knows nothing (unit tests of single plugins). */
export const NO_SIGNALS: SignalView = {
  maxMetricsAgeMs: 1000,
  expectedOutputTokens: () => 0,
  traffic: () => ({ windowMs: 0, requests: 0, reuseRate: 0, sharedRate: 0, hottestPrefixShare: 0, distinctPrefixes: 0, endpoints: [] }),
};

/** One endpoint's share of the traffic window (src/datalayer/traffic-stats.ts computes it). */
export interface EndpointTraffic {
  readonly endpointId: string;
  readonly requests: number;
  /** Σ matched blocks ÷ Σ prefix blocks over decisions routed here (router's prediction). */
  readonly predictedHitRate: number;
  /** Σ cached tokens ÷ Σ prompt tokens over outcomes that reported usage (engine's word). */
  readonly confirmedHitRate?: number;
  /** Outcomes with usage seen in the window. */
  readonly confirmedSamples: number;
}

export interface TrafficSnapshot {
  readonly windowMs: number;
  readonly requests: number;
  /** Share of requests whose leading blocks had been seen before, in [0,1]. */
  readonly reuseRate: number;
  /**
   * Share of requests whose prefix key occurs at least twice in the window, in [0,1]: how
   * much of the traffic shares a prefix, independent of arrival order (reuseRate counts a
   * group's first request as not reused, so it lags right after a new group appears).
   */
  readonly sharedRate: number;
  /** Share of requests carrying the single most frequent prefix key, in [0,1]. */
  readonly hottestPrefixShare: number;
  readonly distinctPrefixes: number;
  readonly endpoints: readonly EndpointTraffic[];
}
