/**
 * What plugins see of the data layer (src/datalayer/data-layer.ts) through their handle:
 * how old an engine-reported figure may be, the learned output lengths, the traffic
 * statistics and, when engines are polled, their samples. The load figures themselves
 * reach plugins inside each candidate's LoadSnapshot.
 */
import type { SampleListener } from '../endpoints/engine-metrics-store.js';
import type { TrafficSnapshot } from './traffic-stats.js';

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
