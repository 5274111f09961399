/**
 * Prometheus series of the TTFT model (src/plugins/multi/ttft-model-plugin.ts), read from the
 * plugin's per-engine statistics at scrape time:
 *
 *   cacheroute_ttft_model_coefficient{endpoint,coefficient}     current fitted coefficient (ms per unit)
 *   cacheroute_ttft_model_observations_total{endpoint}          first tokens observed and fitted
 *   cacheroute_ttft_prediction_ape_sum_total{endpoint}          sum of absolute percentage errors (÷ observations = mean)
 *   cacheroute_ttft_prediction_ape_median{endpoint}             median absolute percentage error of the recent window
 *   cacheroute_ttft_model_ahead_tokens{endpoint}                uncached prefill tokens in flight (not past first token)
 *   cacheroute_ttft_model_untimed_total{endpoint}               streamed answers that ended with no first-token time
 *
 * Errors are online: each prediction is compared with its observation before the fit sees it.
 * Labels are bounded: `endpoint` is a member of the pool, `coefficient` one of five names.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EngineTtftStats } from '../plugins/multi/ttft-model-plugin.js';
import { TTFT_COEFFICIENTS } from '../plugins/shared/ttft-cost-model.js';

export interface TtftModelStatsView {
  stats(): EngineTtftStats[];
}

export function registerTtftModelMetrics(registry: Registry, view: TtftModelStatsView): void {
  const registers = [registry];
  new Gauge({
    name: 'cacheroute_ttft_model_coefficient',
    help: "The TTFT model's current coefficient per engine (ms per feature unit; see docs/plugins.md#ttft-model).",
    labelNames: ['endpoint', 'coefficient'],
    registers,
    collect() {
      this.reset();
      for (const s of view.stats())
        for (const k of TTFT_COEFFICIENTS) this.set({ endpoint: s.endpointId, coefficient: k }, s.coefficients[k]);
    },
  });
  const perEngine = (name: string, help: string, type: 'counter' | 'gauge', value: (s: EngineTtftStats) => number | undefined): void => {
    const collect = function (this: Counter<'endpoint'> | Gauge<'endpoint'>): void {
      this.reset();
      for (const s of view.stats()) {
        const v = value(s);
        if (v === undefined) continue;
        if (this instanceof Counter) this.inc({ endpoint: s.endpointId }, v);
        else this.set({ endpoint: s.endpointId }, v);
      }
    };
    if (type === 'counter') new Counter({ name, help, labelNames: ['endpoint'], registers, collect });
    else new Gauge({ name, help, labelNames: ['endpoint'], registers, collect });
  };
  perEngine(
    'cacheroute_ttft_model_observations_total',
    'First tokens observed and fitted by the TTFT model.',
    'counter',
    (s) => s.observations,
  );
  perEngine(
    'cacheroute_ttft_prediction_ape_sum_total',
    'Sum of absolute percentage errors of predicted vs observed TTFT (divide by observations for the mean).',
    'counter',
    (s) => s.sumAbsPctError,
  );
  perEngine(
    'cacheroute_ttft_prediction_ape_median',
    'Median absolute percentage error of predicted vs observed TTFT over the recent window (0.1 = 10 %).',
    'gauge',
    (s) => s.medianAbsPctError,
  );
  perEngine(
    'cacheroute_ttft_model_untimed_total',
    'Streamed answers served by the engine that ended with no first-token time for the TTFT model (the access log has no first-body tag and the stream saw no first byte).',
    'counter',
    (s) => s.untimed,
  );
  perEngine(
    'cacheroute_ttft_model_ahead_tokens',
    'Uncached prefill tokens in flight on the engine (not past their first token).',
    'gauge',
    (s) => s.aheadTokens,
  );
}
