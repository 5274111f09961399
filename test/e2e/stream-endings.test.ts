/**
 * How Envoy ends ext_proc streams, through the real Envoy and the router: without `ext_proc_graceful_grpc_close` Envoy resets every stream at the end
 * of its request (with NGHTTP2_INTERNAL_ERROR from its HTTP/2 codec, which Node reports as
 * a stream error), with it Envoy half-closes. Either way every request succeeds, the
 * router counts the endings as normal (no transport errors) and its in-flight accounting
 * returns to zero (from Envoy's access log, a few ms after each response).
 */
import { expect } from 'chai';
import { CHAT_PATH, chatRequest, mapLimit, systemPrompt } from '../kit/chat-requests.js';
import { postJson } from '../kit/http-client.js';
import { startStack, type Stack } from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { settledMetrics } from '../kit/settled-metrics.js';

const REQUESTS = 24;

for (const gracefulGrpcClose of [false, true]) {
  describe(`e2e: ext_proc stream endings (graceful close ${gracefulGrpcClose})`, function () {
    this.timeout(60_000);
    let stack: Stack;

    before(async function () {
      requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
      this.timeout(60_000);
      stack = await startStack({
        engines: { count: 2, flags: { profile: 'gpu-like', 'time-scale': 0.05 } },
        envoys: [{ variant: 'original-dst', gracefulGrpcClose }],
      });
    });

    after(async () => {
      await stack?.stop();
    });

    it('serves every request, counts no transport error, and releases every ticket', async () => {
      const envoy = stack.envoys[0]!;
      const system = systemPrompt('endings', 200);
      const results = await mapLimit(
        Array.from({ length: REQUESTS }, (_, i) => i),
        6,
        (i) => postJson(`${envoy.url}${CHAT_PATH}`, chatRequest(system, `question ${i}`, { maxTokens: 4 })),
      );
      expect(results.map((r) => r.status)).to.deep.equal(Array<number>(REQUESTS).fill(200));
      const resets = (await envoy.stat('cluster.cacheroute_extproc.upstream_rq_tx_reset')) ?? 0;
      if (gracefulGrpcClose) expect(resets, 'Envoy reset ext_proc streams').to.equal(0);
      else expect(resets, 'Envoy reset ext_proc streams').to.be.at.least(REQUESTS);
      // Envoy's access log ends each request a few ms after its response (flushed every 5 ms).
      const metrics = await settledMetrics(stack.router!);
      expect(sumSamples(metrics, 'cacheroute_extproc_stream_errors_total', { kind: 'transport' }), 'transport errors').to.equal(0);
      expect(sumSamples(metrics, 'cacheroute_endpoint_inflight_requests'), 'in flight').to.equal(0);
    });
  });
}
