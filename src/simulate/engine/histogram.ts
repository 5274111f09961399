/**
 * A minimal cumulative Prometheus-style histogram (per-bucket counts, sum, count) that can
 * be copied cheaply, so /metrics can serve frozen or delayed snapshots.
 */

/** vLLM's buckets for vllm:time_to_first_token_seconds. */
export const TTFT_BUCKETS_S: readonly number[] = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];

/** Buckets for end-to-end and queue-time histograms (seconds). */
export const LATENCY_BUCKETS_S: readonly number[] = [
  0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
];

export interface HistogramSnapshot {
  readonly bounds: readonly number[];
  /** Non-cumulative count per bound (values > last bound only show in `count`). */
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

export class Histogram {
  private counts: number[];
  private sum = 0;
  private count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    for (let i = 0; i < this.bounds.length; i++) {
      if (v <= this.bounds[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }

  snapshot(): HistogramSnapshot {
    return { bounds: this.bounds, counts: [...this.counts], sum: this.sum, count: this.count };
  }
}
