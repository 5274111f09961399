/**
 * A Prometheus histogram with one label, recorded on the request path into typed-array
 * bucket counts and rendered by the prom-client registry like its own Histogram.
 *
 * Why: prom-client's `Histogram.observe(labels, v)` validates and hashes the label object
 * and indexes its buckets by the bound converted to a string key on every call — a visible
 * cost when every decision is observed. Here the caller resolves the label value to a cell
 * once, and observing is a short loop over the bounds plus three additions. The registry
 * reads it through the public metric shape (`get()` → name, help, type, values), with the
 * same series, labels, order and values as prom-client's Histogram would produce
 * (cumulative `_bucket` per bound then `+Inf`, `_sum`, `_count`, one label set after the
 * other in order of first use); test/unit/util/hot-path-histogram.test.ts compares
 * the two expositions.
 */
import type { Metric, MetricValueWithName, Registry } from 'prom-client';

export interface HistogramCell {
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

interface LabelledCell extends HistogramCell {
  readonly labelValue: string;
}

export class HotPathHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: Float64Array;
  private readonly cells = new Map<string, LabelledCell>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: L,
    private readonly buckets: readonly number[],
    registers: readonly Registry[],
  ) {
    this.bounds = Float64Array.from(buckets);
    for (const r of registers) r.registerMetric(this as unknown as Metric);
  }

  /** The cell of a label value (created on first use). */
  cell(labelValue: string): HistogramCell {
    let c = this.cells.get(labelValue);
    if (c === undefined) {
      c = { labelValue, counts: new Float64Array(this.bounds.length), sum: 0, count: 0 };
      this.cells.set(labelValue, c);
    }
    return c;
  }

  /** Records `value` in `cell` (non-finite values are ignored, prom-client would throw). */
  observe(cell: HistogramCell, value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        cell.counts[i]!++;
        break;
      }
    }
    cell.sum += value;
    cell.count++;
  }

  /** The prom-client metric shape the registry renders. */
  async get(): Promise<{ name: string; help: string; type: 'histogram'; values: MetricValueWithName<string>[]; aggregator: 'sum' }> {
    const values: MetricValueWithName<string>[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const c of this.cells.values()) {
      let acc = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        acc += c.counts[i]!;
        values.push({ labels: { le: this.buckets[i]!, [this.labelName]: c.labelValue }, value: acc, metricName: bucketName });
      }
      values.push({ labels: { le: '+Inf', [this.labelName]: c.labelValue }, value: c.count, metricName: bucketName });
      values.push({ labels: { [this.labelName]: c.labelValue }, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { [this.labelName]: c.labelValue }, value: c.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }
}
