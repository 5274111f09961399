/**
 * `npm run demo -- --engines vllm --pd [shared-store|nixl]`: prefill/decode disaggregation on
 * two real vLLM CPU engines, a prefill engine (kv_producer) and a decode engine (kv_consumer)
 * behind `cacheroute pd-sidecar`, the router from examples/router-pd.yaml and Envoy
 * (test/kit/pd-stack.ts). The KV moves through vLLM's ExampleConnector on a shared directory
 * (`shared-store`, the default) or its NixlConnector on CPU (`nixl`).
 *
 * It sends, one at a time so each request's engine counters are its own: long prompts nobody
 * holds (split: prefilled on the prefill engine, decoded on the decode engine from the moved
 * KV), the same prompts with a follow-up (the decode engine holds them: no prefill leg), and
 * short prompts (not worth a split). Per request it prints the router's decision, the
 * sidecar's result, the client's TTFT and, from each engine's own
 * vllm:prompt_tokens_by_source_total, which prompt tokens were computed, loaded from the other
 * engine, or found in the engine's own cache.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseDecisionSummary } from '../src/extproc/decision-header.js';
import { postJson } from '../test/kit/http-client.js';
import { startPdStack, type PdStack } from '../test/kit/pd-stack.js';
import { runDir } from '../test/kit/processes.js';
import { syntheticTokens } from '../test/kit/synthetic-text.js';
import { exampleConnector, startVllmEngines, type VllmEngineFleet, type VllmEngineInfo } from '../test/kit/vllm-engines.js';
import { TINY_MODEL_NAME } from '../test/kit/vllm-paths.js';
import { promptTokensBySource, sourceDelta, type PromptTokensBySource } from '../test/kit/vllm-prompt-sources.js';

export type PdDemoConnector = 'shared-store' | 'nixl';
export const PD_DEMO_CONNECTORS: readonly PdDemoConnector[] = ['shared-store', 'nixl'];

/** Words per long prompt (~1.6 tokens each of the tiny model: ~2,400 tokens, ~1.3 s cold on one core). */
const LONG_WORDS = 1500;
const SHORT_WORDS = 60;
const LONG_PROMPTS = 3;
const MAX_TOKENS = 16;

const bySource = (e: VllmEngineInfo): Promise<PromptTokensBySource> => promptTokensBySource(e.metricsUrl);

interface Row {
  readonly kind: string;
  readonly status: number;
  readonly pd: string;
  readonly why: string;
  readonly ttftMs: number | undefined;
  readonly prefill: PromptTokensBySource;
  readonly decode: PromptTokensBySource;
}

export async function runPdDemo(connector: PdDemoConnector, seed: number, log: (msg: string) => void): Promise<void> {
  const store = mkdtempSync(join(runDir(), 'demo-kv-store-'));
  let fleet: VllmEngineFleet | undefined;
  let pd: PdStack | undefined;
  const stop = async (): Promise<void> => {
    await pd?.stop();
    await fleet?.stop();
    rmSync(store, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    log('interrupted: stopping everything');
    void stop().finally(() => process.exit(130));
  });
  try {
    log(
      `starting a prefill and a decode vLLM CPU engine with ${connector === 'nixl' ? 'NixlConnector (cpu)' : 'ExampleConnector'} (about a minute)`,
    );
    fleet = await startVllmEngines({
      count: 2,
      kvEvents: false,
      kvTransfer: (i) => {
        const role = i === 0 ? 'kv_producer' : 'kv_consumer';
        return connector === 'nixl' ? { connector: 'NixlConnector', role, bufferDevice: 'cpu' } : exampleConnector(store, role);
      },
    });
    const [prefill, decode] = fleet.engines as [VllmEngineInfo, VllmEngineInfo];
    pd = await startPdStack({
      prefill: [prefill.id],
      decode: [decode.id],
      connector,
      router: { telemetry: { logLevel: 'warn', decisionHeader: true } },
    });
    log(`prefill engine ${prefill.id}, decode engine ${decode.id} behind pd-sidecar ${pd.sidecars[0]!.address}, envoy ${pd.envoy.url}`);

    const rows: Row[] = [];
    const send = async (kind: string, prompt: string): Promise<void> => {
      const p0 = await bySource(prefill);
      const d0 = await bySource(decode);
      let ttftMs: number | undefined;
      const res = await postJson(
        `${pd!.envoy.url}/v1/completions`,
        { model: TINY_MODEL_NAME, prompt, max_tokens: MAX_TOKENS, ignore_eos: true, stream: true },
        {
          timeoutMs: 120_000,
          onChunk: (chunk, elapsed) => {
            if (ttftMs === undefined && /"text":"[^"]/.test(chunk.toString('utf8'))) ttftMs = elapsed;
          },
        },
      );
      const decision = parseDecisionSummary(res.header('x-cacheroute-decision') ?? '');
      rows.push({
        kind,
        status: res.status,
        pd: res.header('x-cacheroute-pd') ?? '-',
        why: decision['pd'] ?? '-',
        ttftMs,
        prefill: sourceDelta(p0, await bySource(prefill)),
        decode: sourceDelta(d0, await bySource(decode)),
      });
    };
    const longs = Array.from({ length: LONG_PROMPTS }, (_, i) => syntheticTokens(`demo-pd-${seed}-${i}`, LONG_WORDS));
    for (const p of longs) await send('long, new', p);
    for (const p of longs) await send('long, follow-up', `${p}and a follow-up question`);
    for (let i = 0; i < LONG_PROMPTS; i++) await send('short', syntheticTokens(`demo-pd-short-${seed}-${i}`, SHORT_WORDS));
    printRows(rows);
  } finally {
    await stop();
  }
}

function printRows(rows: readonly Row[]): void {
  const head = ['request', 'status', 'router pd', 'sidecar', 'TTFT', 'prefill engine computed', 'decode: computed', 'loaded', 'own cache'];
  const widths = [17, 7, 14, 13, 9, 24, 17, 8, 10];
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 10)).join('');
  const out = ['', line(head)];
  for (const r of rows) {
    out.push(
      line([
        r.kind,
        String(r.status),
        r.why,
        r.pd,
        r.ttftMs === undefined ? '-' : `${r.ttftMs.toFixed(0)} ms`,
        String(r.prefill.local_compute),
        String(r.decode.local_compute),
        String(r.decode.external_kv_transfer),
        String(r.decode.local_cache_hit),
      ]),
    );
  }
  out.push(
    '',
    "Token columns: each engine's own vllm:prompt_tokens_by_source_total (local_compute, external_kv_transfer, local_cache_hit).",
  );
  process.stdout.write(`${out.join('\n')}\n`);
}
