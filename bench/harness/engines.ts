/**
 * The run's simulated engines: started once per engine setup through the simulator's own
 * launcher, reset between contenders (POST /admin/reset clears the prefix cache and the
 * counters, so every contender starts cold), and scraped for vLLM-named counters.
 */
import { Agent, request } from 'node:http';
import { startVllmEngines } from '../../test/kit/vllm-engines.js';
import { startSimEngines } from '../../test/kit/sim-engines.js';
import { ensureTinyModel } from '../../test/kit/tiny-model.js';
import type { EngineHandle } from '../contenders/types.js';
import type { EngineFlags, EngineSetup } from '../presets/types.js';
import { countersFromSamples, type EngineCounters } from '../stats/engine-counters.js';
import { parsePrometheusText } from '../../test/kit/prometheus-text.js';

export interface EngineFleet {
  readonly engines: readonly EngineHandle[];
  readonly pids: readonly number[];
  stop(): Promise<void>;
}

const adminAgent = new Agent({ keepAlive: false });

/** Small HTTP helper for admin calls (bounded, never hangs). */
export function httpText(url: string, method: 'GET' | 'POST', timeoutMs = 5000, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method,
      agent: adminAgent,
      headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const timer = setTimeout(() => req.destroy(new Error(`timeout ${method} ${url}`)), timeoutMs);
    req.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.once('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text });
      });
      res.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    req.end(body);
  });
}

export async function startEngineFleet(count: number, flags: EngineFlags, model: string, setup?: EngineSetup): Promise<EngineFleet> {
  if (setup?.kind === 'vllm') {
    // A shared 2-core machine can take minutes to import vLLM twice at once: wait up to 10 min.
    const real = await startVllmEngines({ count, startTimeoutMs: 600_000, ...(setup.vllm ?? {}), modelName: model });
    const engines = real.engines.map((e) => ({ id: e.id, url: e.url, port: e.port, address: e.id, resetPath: '/reset_prefix_cache' }));
    return { engines, pids: real.engines.map((e) => e.pid), stop: async () => void (await real.stop()) };
  }
  const simFlags: EngineFlags =
    setup?.tinyModelTokenizer === true ? { model, tokenizer: ensureTinyModel().dir, ...flags } : { model, ...flags };
  const fleet = await startSimEngines({ count, flags: simFlags });
  const engines = fleet.engines.map((e) => ({ id: e.id, url: e.url, port: e.port, address: `${e.host}:${e.port}` }));
  return { engines, pids: [...new Set(fleet.engines.map((e) => e.pid))], stop: () => fleet.stop() };
}

/** Clears every engine's prefix cache and counters; throws if an engine refuses. */
export async function resetEngines(engines: readonly EngineHandle[]): Promise<void> {
  await Promise.all(
    engines.map(async (e) => {
      const path = e.resetPath ?? '/admin/reset';
      const res = await httpText(`${e.url}${path}`, 'POST');
      if (res.status !== 200) throw new Error(`engine ${e.id}: ${path} answered ${res.status}`);
    }),
  );
}

export async function scrapeEngineCounters(engines: readonly EngineHandle[]): Promise<Map<string, EngineCounters>> {
  const out = new Map<string, EngineCounters>();
  await Promise.all(
    engines.map(async (e) => {
      const res = await httpText(`${e.url}/metrics`, 'GET');
      if (res.status !== 200) throw new Error(`engine ${e.id}: /metrics answered ${res.status}`);
      out.set(e.id, countersFromSamples(parsePrometheusText(res.text)));
    }),
  );
  return out;
}

/** Running + waiting requests summed over engines (0 = idle), from /metrics. */
export async function enginesBusy(engines: readonly EngineHandle[]): Promise<number> {
  let busy = 0;
  for (const e of engines) {
    const res = await httpText(`${e.url}/metrics`, 'GET');
    for (const s of parsePrometheusText(res.text)) {
      if (s.name === 'vllm:num_requests_running' || s.name === 'vllm:num_requests_waiting') busy += s.value;
    }
  }
  return busy;
}
