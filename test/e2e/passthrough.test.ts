/**
 * What Envoy + router must pass through untouched, and what they must refuse, for both
 * host-pinning variants: SSE streams arrive intact and incrementally, a large body crosses
 * the FULL_DUPLEX_STREAMED ext_proc exchange unchanged, a bodyless GET on a non-inference
 * path is forwarded, and bad inputs get the documented answer without hurting the router.
 */
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { CHAT_PATH, chatRequest, servedBy, sseEvents, systemPrompt } from '../kit/chat-requests.js';
import { httpRequest, isHttpOk, postJson, type HttpResult } from '../kit/http-client.js';
import { sleep, startStack, type Stack } from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

const VARIANTS = ['override-host', 'original-dst'] as const;
type Variant = (typeof VARIANTS)[number];
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** An SSE event with the per-request fields (id, timestamp, generated words) reduced to their shape. */
function normaliseEvent(data: string): unknown {
  if (data === '[DONE]') return data;
  const ev = JSON.parse(data) as Record<string, unknown>;
  delete ev['id'];
  delete ev['created'];
  for (const choice of (ev['choices'] as Array<{ delta?: { content?: string } }> | undefined) ?? []) {
    const c = choice.delta?.content;
    if (typeof c === 'string' && choice.delta) choice.delta.content = `<${c.split(' ').filter(Boolean).length} words>`;
  }
  return ev;
}

describe('e2e: pass-through and bad inputs through Envoy', function () {
  this.timeout(60_000);
  let stack: Stack;

  before(async function () {
    requireComponents(this, envoyBinary(), routerBuild(), simEngineBuild());
    this.timeout(60_000);
    stack = await startStack({
      engines: { count: 4, flags: { profile: 'gpu-like', 'time-scale': 0.05, 'max-model-len': 65536 } },
      router: { config: { requests: { maxBodyBytes: MAX_BODY_BYTES } } },
      envoys: VARIANTS.map((variant) => ({ variant })),
    });
  });

  after(async () => {
    await stack?.stop();
  });

  const envoyUrl = (variant: Variant): string => {
    const e = stack.envoys[VARIANTS.indexOf(variant)];
    if (!e) throw new Error(`no envoy for ${variant}`);
    return e.url;
  };
  const setTimeScale = (timeScale: number): Promise<HttpResult[]> =>
    Promise.all(stack.engines.map((e) => postJson(`${e.url}/admin/config`, { timeScale })));
  const engineUrl = (address: string): string => {
    const e = stack.engines.find((x) => `${x.host}:${x.port}` === address);
    if (!e) throw new Error(`unknown engine ${address}`);
    return e.url;
  };

  for (const variant of VARIANTS) {
    describe(variant, () => {
      it('streams an SSE response intact and incrementally', async () => {
        const body = chatRequest(systemPrompt(`sse-${variant}`, 200), 'stream please', { stream: true, maxTokens: 24, ignoreEos: true });
        // Decode steps of ~4 ms, so tokens leave the engine as separate writes.
        await setTimeScale(0.5);
        let viaEnvoy: HttpResult;
        let direct: HttpResult;
        try {
          viaEnvoy = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, body);
          expect(viaEnvoy.status, viaEnvoy.text()).to.equal(200);
          direct = await postJson(`${engineUrl(servedBy(viaEnvoy))}${CHAT_PATH}`, body);
          expect(direct.status).to.equal(200);
        } finally {
          await setTimeScale(0.05);
        }
        expect(viaEnvoy.header('content-type')).to.match(/^text\/event-stream/);

        const envoyEvents = sseEvents(viaEnvoy.text());
        const directEvents = sseEvents(direct.text());
        expect(envoyEvents.length).to.equal(24 + 3); // role chunk, 24 tokens, finish chunk, [DONE]
        expect(envoyEvents.at(-1)).to.equal('[DONE]');
        expect(envoyEvents.map(normaliseEvent)).to.deep.equal(directEvents.map(normaliseEvent));
        // The SSE framing is unchanged byte for byte apart from the per-request fields.
        const frame = (s: string): string => s.replace(/data: \{.*\}/g, 'data: {}');
        expect(frame(viaEnvoy.text())).to.equal(frame(direct.text()));
        // Not buffered by Envoy or the router: tokens arrived in several pieces.
        expect(viaEnvoy.chunks.length, 'chunks via Envoy').to.be.greaterThan(4);
      });

      it('carries a large body across the ext_proc exchange unchanged', async () => {
        // ~120 KB: several ext_proc body chunks in both directions.
        const body = chatRequest(systemPrompt(`large-${variant}`, 30_000), 'summarise', { maxTokens: 2 });
        const viaEnvoy = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, body);
        expect(viaEnvoy.status, viaEnvoy.text().slice(0, 300)).to.equal(200);
        const direct = await postJson(`${engineUrl(servedBy(viaEnvoy))}${CHAT_PATH}`, body);
        expect(direct.status).to.equal(200);
        const usage = (r: typeof direct): number => (r.json() as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
        expect(usage(viaEnvoy)).to.equal(usage(direct));
        expect(usage(viaEnvoy)).to.be.greaterThan(30_000);
      });

      if (variant === 'override-host') {
        it('forwards a bodyless GET on a non-inference path (fallback LB)', async () => {
          const res = await httpRequest(`${envoyUrl(variant)}/v1/models`);
          expect(res.status).to.equal(200);
          expect(stack.engineAddresses).to.include(servedBy(res));
          const direct = await httpRequest(`${engineUrl(servedBy(res))}/v1/models`);
          expect(res.json()).to.deep.equal(direct.json());
        });

        it('forwards an unknown path unrouted (the engine answers 404)', async () => {
          const res = await httpRequest(`${envoyUrl(variant)}/v1/unknown`, {
            method: 'POST',
            body: '{}',
            headers: { 'content-type': 'application/json' },
          });
          expect(res.status).to.equal(404);
          expect(stack.engineAddresses).to.include(servedBy(res));
        });
      } else {
        it('answers 503 for non-inference paths: ORIGINAL_DST has no destination without a pick', async () => {
          const get = await httpRequest(`${envoyUrl(variant)}/v1/models`);
          expect(get.status).to.equal(503);
          expect(servedBy(get)).to.equal('');
          const unknown = await httpRequest(`${envoyUrl(variant)}/v1/unknown`, {
            method: 'POST',
            body: '{}',
            headers: { 'content-type': 'application/json' },
          });
          expect(unknown.status).to.equal(503);
        });
      }

      it('answers malformed JSON with 400', async () => {
        const res = await httpRequest(`${envoyUrl(variant)}${CHAT_PATH}`, {
          method: 'POST',
          body: '{"model": "m", "messages": [',
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status).to.equal(400);
        expect(servedBy(res)).to.equal('');
        expect((res.json() as { error: { code: string } }).error.code).to.equal('BAD_REQUEST');
      });

      it('answers a gzip-compressed body with 415', async () => {
        const res = await httpRequest(`${envoyUrl(variant)}${CHAT_PATH}`, {
          method: 'POST',
          body: gzipSync(JSON.stringify(chatRequest('system', 'user'))),
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        });
        expect(res.status).to.equal(415);
        expect((res.json() as { error: { code: string } }).error.code).to.equal('UNSUPPORTED_MEDIA');
      });

      it('answers a 10 MB body with 413 (requests.maxBodyBytes = 4 MiB)', async () => {
        const body = JSON.stringify(chatRequest('x'.repeat(10 * 1024 * 1024), 'user'));
        const res = await httpRequest(`${envoyUrl(variant)}${CHAT_PATH}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status).to.equal(413);
        expect((res.json() as { error: { code: string } }).error.code).to.equal('PAYLOAD_TOO_LARGE');
      });

      it('stays healthy and keeps routing after the bad inputs', async () => {
        const router = stack.router;
        if (!router) throw new Error('no router');
        expect(router.isRunning()).to.equal(true);
        expect(await isHttpOk(`${router.adminUrl}/healthz`)).to.equal(true);
        expect(await isHttpOk(`${router.adminUrl}/readyz`)).to.equal(true);
        const system = systemPrompt(`after-bad-${variant}`, 400);
        const served: string[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await postJson(`${envoyUrl(variant)}${CHAT_PATH}`, chatRequest(system, `q${i}`));
          expect(res.status).to.equal(200);
          served.push(servedBy(res));
        }
        expect(new Set(served).size).to.equal(1);
        // Every ext_proc stream (including the refused ones) was released.
        let active = Number.NaN;
        for (let i = 0; i < 40; i++) {
          active = sumSamples(await router.metrics(), 'cacheroute_extproc_streams_active');
          if (active === 0) break;
          await sleep(50);
        }
        expect(active).to.equal(0);
      });
    });
  }
});
