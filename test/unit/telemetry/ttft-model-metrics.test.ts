import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createScheduler } from '../../../src/compose/create-scheduler.js';
import { TTFT_MODEL_STATS } from '../../../src/plugins/multi/ttft-model-plugin.js';
import { registerTtftModelMetrics } from '../../../src/telemetry/ttft-model-metrics.js';
import { ManualClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { config, request, text } from '../builders.js';

describe('ttft-model metrics', () => {
  it("exposes each engine's coefficients, observations, online error and queued prefill from a predicted-ttft scheduler", async () => {
    const clock = new ManualClock();
    const s = createScheduler(config(2, { strategy: 'predicted-ttft' }), { clock, rng: seededRng(1) });
    const view = s.service(TTFT_MODEL_STATS);
    expect(view).to.not.equal(undefined);
    const registry = new Registry();
    registerTtftModelMetrics(registry, view!);
    const t = s.route(request({ prefix: text(1, 4000), stream: true }));
    clock.advance(300);
    t.firstByte?.();
    const open = s.route(request({ prefix: text(2, 2000), stream: true, subset: [t.decision.endpoint.id] }));
    const page = await registry.metrics();
    const ep = t.decision.endpoint.id;
    expect(page).to.include(`cacheroute_ttft_model_coefficient{endpoint="${ep}",coefficient="prefillMsPerToken"}`);
    expect(page).to.include(`cacheroute_ttft_model_observations_total{endpoint="${ep}"} 1`);
    expect(page).to.include(`cacheroute_ttft_model_ahead_tokens{endpoint="${ep}"} 500`);
    expect(page).to.include(`cacheroute_ttft_model_untimed_total{endpoint="${ep}"} 0`);
    // Predicted 10 + 0.106×1000 + 12.4 + 0.112×1000×0.5 = 184.4 ms, observed 300: |184.4 − 300| / 300.
    expect(page).to.match(new RegExp(`cacheroute_ttft_prediction_ape_median\\{endpoint="${ep.replace(/\./g, '\\.')}"\\} 0\\.385`));
    expect(page).to.include(`cacheroute_ttft_prediction_ape_sum_total{endpoint="${ep}"} 0.385`);
    open.finish({ aborted: false });
    t.finish({ aborted: false });
  });
});
