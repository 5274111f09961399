/**
 * Prefill/decode disaggregation through real Envoy on simulated engines: a prefill engine
 * and a decode engine speaking either of vLLM's forms (the kv_transfer_params exchange of
 * NixlConnector, or ExampleConnector's shared store on a directory), the decode
 * engine behind a real `cacheroute pd-sidecar` process, the router built from
 * examples/router-pd.yaml, Envoy (override-host) in front. What the bar asks:
 *  - a long uncached prompt is prefilled on the prefill engine and decoded on the decode
 *    engine (KV loaded, not recomputed), tokens streamed to the client through the sidecar;
 *  - a short prompt, and a prompt the decode engine already holds, skip the prefill leg;
 *  - `Prefer: if-available` gets 412 when a prefill leg would be needed;
 *  - a client's own x-prefiller-host-port never reaches the sidecar;
 *  - a dead prefill engine falls back to aggregated serving on the decode engine, at once.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sseEvents } from '../kit/chat-requests.js';
import { httpRequest, postJson, type HttpResult } from '../kit/http-client.js';
import { startPdStack, type PdStack } from '../kit/pd-stack.js';
import { runDir, startEngines, type SimEngineFleet } from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';
import { syntheticTokens } from '../kit/synthetic-text.js';

const ENGINE_FLAGS = { profile: 'gpu-like', 'time-scale': 0.1 } as const;

interface Stats {
  requestsServed: number;
  kvTransfers: number;
  kvTransferTokens: number;
  cachedTokens: number;
}

for (const connector of ['nixl', 'shared-store'] as const)
  describe(`e2e: prefill/decode disaggregation through Envoy (simulated engines, ${connector})`, function () {
    this.timeout(60_000);
    let prefill: SimEngineFleet;
    let decode: SimEngineFleet;
    let pd: PdStack;
    let storeDir: string | undefined;

    before(async function () {
      requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
      storeDir = connector === 'shared-store' ? mkdtempSync(join(runDir(), 'kv-store-')) : undefined;
      const flags = { ...ENGINE_FLAGS, 'kv-connector': connector, ...(storeDir !== undefined ? { 'kv-store-dir': storeDir } : {}) };
      prefill = await startEngines({ count: 1, flags });
      decode = await startEngines({ count: 1, flags });
      pd = await startPdStack({
        prefill: [`127.0.0.1:${prefill.engines[0]!.port}`],
        decode: [`127.0.0.1:${decode.engines[0]!.port}`],
        connector,
        sidecarArgs: ['--prefill-timeout-ms', '5000'],
      });
    });

    after(async () => {
      await pd?.stop();
      await prefill?.stop();
      await decode?.stop();
      if (storeDir !== undefined) rmSync(storeDir, { recursive: true, force: true });
    });

    const stats = async (fleet: SimEngineFleet): Promise<Stats> => (await httpRequest(`${fleet.engines[0]!.url}/stats`)).json() as Stats;
    const complete = (prompt: string, headers: Record<string, string> = {}, stream = true): Promise<HttpResult> =>
      postJson(
        `${pd.envoy.url}/v1/completions`,
        {
          model: 'sim-model',
          prompt,
          max_tokens: 12,
          ignore_eos: true,
          stream,
          ...(stream ? { stream_options: { include_usage: true } } : {}),
        },
        { headers, timeoutMs: 20_000 },
      );
    const usage = (r: HttpResult): { completion_tokens: number; prompt_tokens_details: { cached_tokens: number } } => {
      const events = sseEvents(r.text()).filter((e) => e !== '[DONE]');
      return (JSON.parse(events.at(-1)!) as { usage: ReturnType<typeof usage> }).usage;
    };
    const pdDecisions = async (why: string): Promise<number> =>
      sumSamples(await pd.router.metrics(), 'cacheroute_pd_decisions_total', { why });

    it('prefills a long uncached prompt on the prefill engine and streams the decode engine’s tokens through the sidecar', async () => {
      const p0 = await stats(prefill);
      const d0 = await stats(decode);
      const r = await complete(syntheticTokens('pd-long-1', 3000));
      expect(r.status, r.text()).to.equal(200);
      expect(r.header('x-cacheroute-pd')).to.equal('split');
      expect(r.header('x-engine-id')).to.equal(decode.engines[0]!.id);
      expect(r.chunks.length, 'streamed in pieces').to.be.greaterThan(2);
      const u = usage(r);
      expect(u.completion_tokens).to.equal(12);
      const p1 = await stats(prefill);
      const d1 = await stats(decode);
      expect(p1.requestsServed - p0.requestsServed, 'prefill legs').to.equal(1);
      expect(d1.kvTransfers - d0.kvTransfers, 'KV loads on the decode engine').to.equal(1);
      // The decode engine loaded the prompt's blocks; it computed none of them itself.
      expect(u.prompt_tokens_details.cached_tokens).to.equal(d1.kvTransferTokens - d0.kvTransferTokens);
      expect(u.prompt_tokens_details.cached_tokens).to.be.greaterThan(2900);
      expect(d1.cachedTokens - d0.cachedTokens).to.equal(0);
      expect(await pdDecisions('split')).to.be.greaterThanOrEqual(1);
    });

    it('serves a short prompt on the decode engine alone', async () => {
      const p0 = await stats(prefill);
      const r = await complete(syntheticTokens('pd-short', 100));
      expect(r.status).to.equal(200);
      expect(r.header('x-cacheroute-pd')).to.equal('passthrough');
      expect(r.header('x-engine-id')).to.equal(decode.engines[0]!.id);
      expect((await stats(prefill)).requestsServed).to.equal(p0.requestsServed);
      expect(await pdDecisions('short-prompt')).to.be.greaterThanOrEqual(1);
    });

    it('serves a prompt the decode engine already holds without a prefill leg', async () => {
      const prompt = syntheticTokens('pd-long-2', 3000);
      expect((await complete(prompt)).header('x-cacheroute-pd')).to.equal('split');
      const p0 = await stats(prefill);
      const d0 = await stats(decode);
      const r = await complete(`${prompt}and one more question`);
      expect(r.status).to.equal(200);
      expect(r.header('x-cacheroute-pd')).to.equal('passthrough');
      expect((await stats(prefill)).requestsServed).to.equal(p0.requestsServed);
      const d1 = await stats(decode);
      expect(d1.kvTransfers).to.equal(d0.kvTransfers);
      expect(d1.cachedTokens - d0.cachedTokens, 'a local prefix hit').to.be.greaterThan(2900);
      expect(await pdDecisions('cached')).to.be.greaterThanOrEqual(1);
    });

    it('answers Prefer: if-available with 412 when the decode engine lacks the prompt, and serves it when it holds it', async () => {
      const p0 = await stats(prefill);
      const miss = await complete(syntheticTokens('pd-conditional', 3000), { prefer: 'if-available' });
      expect(miss.status).to.equal(412);
      expect((await stats(prefill)).requestsServed).to.equal(p0.requestsServed);
      const hit = await complete(syntheticTokens('pd-long-1', 3000), { prefer: 'if-available' });
      expect(hit.status).to.equal(200);
      expect(hit.header('x-cacheroute-pd')).to.equal('passthrough');
    });

    it('never lets a client’s x-prefiller-host-port reach the sidecar', async () => {
      const p0 = await stats(prefill);
      // Not split: the header is removed, so the sidecar passes the request through (a forged
      // header that reached it would make it call that address, or refuse it with 400).
      const short = await complete(syntheticTokens('pd-spoof-short', 100), { 'x-prefiller-host-port': '127.0.0.9:1' });
      expect(short.status, short.text()).to.equal(200);
      expect(short.header('x-cacheroute-pd')).to.equal('passthrough');
      const outside = await complete(syntheticTokens('pd-spoof-short-2', 100), { 'x-prefiller-host-port': '10.1.2.3:8000' });
      expect(outside.status).to.equal(200);
      expect(outside.header('x-cacheroute-pd')).to.equal('passthrough');
      // Split: the router's value replaces the client's; the real prefill engine does the leg.
      const long = await complete(syntheticTokens('pd-spoof-long', 3000), { 'x-prefiller-host-port': '127.0.0.9:1' });
      expect(long.status).to.equal(200);
      expect(long.header('x-cacheroute-pd')).to.equal('split');
      expect((await stats(prefill)).requestsServed - p0.requestsServed).to.equal(1);
    });

    it('falls back to aggregated serving on the decode engine when the prefill engine is gone, without waiting for a timeout', async () => {
      await prefill.stop();
      const t0 = performance.now();
      const r = await complete(syntheticTokens('pd-dead-prefill', 3000));
      const ms = performance.now() - t0;
      expect(r.status, r.text()).to.equal(200);
      // The router still names the engine (it has not seen it go) and the sidecar's leg fails
      // on connect, or it already saw it go and does not split at all.
      expect(r.header('x-cacheroute-pd')).to.be.oneOf(['aggregated-prefill-failed', 'passthrough']);
      expect(r.header('x-engine-id')).to.equal(decode.engines[0]!.id);
      expect(usage(r).completion_tokens).to.equal(12);
      expect(ms, 'well under the 5 s prefill timeout').to.be.lessThan(4000);
    });
  });
