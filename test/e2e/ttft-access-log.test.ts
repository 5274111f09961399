/**
 * The TTFT model learns on the default completion path: real Envoy (the canonical
 * override-host config, whose gRPC access logger carries the `cacheroute.first_body_us` tag),
 * the real router with `strategy: predicted-ttft` and its default `access-log` completion, a
 * sim engine whose prefill is ~3x slower than the model's priors. Every streamed request's
 * entry brings its first-token time, the fit follows the engine (its prefill coefficient
 * rises from the prior towards the engine's), and a non-streamed answer teaches nothing.
 */
import { expect } from 'chai';
import { Agent } from 'node:http';
import { systemPrompt } from '../kit/chat-requests.js';
import { httpRequest } from '../kit/http-client.js';
import { engineAddress, routerConfigDoc, sleep, startEngines, startEnvoy, startRouter } from '../kit/processes.js';
import type { EnvoyProcess, RouterProcess, SimEngineFleet } from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { type StreamedRequest, streamRequest } from '../kit/sse-request.js';

const PREFILL_MS_PER_TOKEN = 0.3;
const ENGINE_FLAGS = {
  profile: 'gpu-like',
  'time-scale': 1,
  'decode-ms-per-seq': 5,
  'step-overhead-ms': 0,
  'prefill-ms-per-token': PREFILL_MS_PER_TOKEN,
} as const;
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

function chat(i: number, systemTokens: number): StreamedRequest {
  return {
    api: 'chat',
    messages: [
      { role: 'system', content: systemPrompt(`ttft-log-${i}`, systemTokens) },
      { role: 'user', content: `question ${i}` },
    ],
    maxTokens: 4,
  };
}

interface ModelState {
  pooled: { samples: number; coefficients: Record<string, number> };
  engines: { observations: number; medianAbsPctError?: number }[];
}

async function modelState(router: RouterProcess): Promise<ModelState> {
  const { plugins } = (await httpRequest(`${router.adminUrl}/debug/plugins`)).json() as { plugins: { name: string; state: unknown }[] };
  const s = plugins.find((p) => p.name === 'ttft-model');
  expect(s, 'ttft-model on /debug/plugins').to.not.equal(undefined);
  return s!.state as ModelState;
}

async function observations(router: RouterProcess): Promise<number> {
  return sumSamples(await router.metrics(), 'cacheroute_ttft_model_observations_total');
}

describe('e2e: the TTFT model learns from Envoy access log timings (default completion path)', function () {
  this.timeout(120_000);
  let fleet: SimEngineFleet | undefined;
  let router: RouterProcess | undefined;
  let envoy: EnvoyProcess | undefined;

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    fleet = await startEngines({ count: 1, flags: ENGINE_FLAGS });
    const engines = fleet.engines.map(engineAddress);
    router = await startRouter({ name: 'router-ttft-log', config: routerConfigDoc(engines, { strategy: 'predicted-ttft' }) });
    envoy = await startEnvoy({ variant: 'override-host', name: 'envoy-ttft-log', engines, routerAddress: router.grpcAddress });
  });

  after(async () => {
    await envoy?.stop();
    await router?.stop();
    await fleet?.stop();
    agent.destroy();
  });

  it('fits every streamed request from its entry and follows a slow engine; a whole answer teaches nothing', async () => {
    const n = 24;
    const clientTtft: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await streamRequest(chat(i, 400 + (i % 6) * 300), {
        baseUrl: envoy!.url,
        model: 'sim-model',
        timeoutMs: 20_000,
        agent,
      });
      expect(r.outcome, r.error ?? '').to.equal('ok');
      clientTtft.push(r.ttftMs!);
    }
    // Entries are flushed every 5 ms; wait until all arrived.
    for (let t = 0; t < 100 && (await observations(router!)) < n; t++) await sleep(50);
    expect(await observations(router!)).to.equal(n);
    const state = await modelState(router!);
    expect(state.pooled.samples).to.equal(n);
    // The prior is 0.106 ms/token; the engine takes 0.3. Header time (a few ms) would pull it down instead.
    expect(state.pooled.coefficients['prefillMsPerToken']).to.be.above(0.18);
    expect(Math.min(...clientTtft), 'the workload is prefill-bound').to.be.above(100);

    const whole = await httpRequest(`${envoy!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-model', messages: chat(99, 800).messages, max_tokens: 4 }),
      timeoutMs: 20_000,
    });
    expect(whole.status).to.equal(200);
    await sleep(300);
    expect(await observations(router!), 'a non-streamed answer is not a first token').to.equal(n);
  });
});
