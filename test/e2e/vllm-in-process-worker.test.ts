/**
 * A real vLLM CPU engine started with its model worker inside the engine-core process
 * (launcher option `inProcessWorker`, vLLM's uniprocess executor): no worker process apart,
 * the engine still binds its compute to the core it was given, serves a streamed chat request,
 * reports cached tokens and publishes KV events. Without vLLM the suite skips with the
 * reason, except under CI=true where it fails (requireComponents).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Subscriber } from 'zeromq';
import { engineEnv, startVllmEngines, type VllmEngineFleet } from '../kit/vllm-engines.js';
import { TINY_MODEL_NAME } from '../kit/vllm-paths.js';
import { requireComponents, vllmCpu } from '../kit/require-component.js';

const comm = (pid: number): string => readFileSync(`/proc/${pid}/comm`, 'utf8').trim();

/** Cores each thread of `pid` may run on (Cpus_allowed_list), one entry per distinct list. */
function threadCores(pid: number): Set<string> {
  const out = new Set<string>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(status);
    if (m !== null) out.add(m[1]!);
  }
  return out;
}

describe('engine environment: the model worker in-process', () => {
  it('asks vLLM for its uniprocess executor only when told to', () => {
    expect(engineEnv('/tmp/x', '127.0.0.2', 0, 1, 't', true)['VLLM_ENABLE_V1_MULTIPROCESSING']).to.equal('0');
    expect(engineEnv('/tmp/x', '127.0.0.2', 0, 1, 't')).to.not.have.property('VLLM_ENABLE_V1_MULTIPROCESSING');
    // The OMP environment the in-process worker relies on is set before the engine starts.
    const env = engineEnv('/tmp/x', '127.0.0.2', 1, 1, 't', true);
    expect([env['OMP_NUM_THREADS'], env['VLLM_CPU_OMP_THREADS_BIND']]).to.deep.equal(['1', '1']);
  });
});

describe('a real vLLM engine with its model worker in-process', function () {
  this.timeout(300_000);
  let fleet: VllmEngineFleet | undefined;

  before(async function () {
    requireComponents(this, vllmCpu());
    fleet = await startVllmEngines({ count: 1, numGpuBlocks: 64, maxModelLen: 4096, inProcessWorker: true });
  });

  after(async () => {
    await fleet?.stop();
  });

  it('runs no worker process apart, and the engine core keeps its compute on the engine core', () => {
    const names = fleet!.processes().map((pid) => [pid, comm(pid)] as const);
    expect(names.map(([, n]) => n)).to.not.include('VLLM::Worker');
    const core = names.find(([, n]) => n.startsWith('VLLM::EngineCor'));
    expect(core, `engine processes: ${names.map(([, n]) => n).join(', ')}`).to.not.equal(undefined);
    // Every thread of the engine-core process (which runs the model) on the engine's core.
    expect([...threadCores(core![0])]).to.deep.equal([String(fleet!.engines[0]!.core)]);
  });

  it('serves a streamed chat request and reports the cached prefix of a repeat', async () => {
    const url = `${fleet!.engines[0]!.url}/v1/chat/completions`;
    const messages = [
      { role: 'system', content: 'a prefix worth caching '.repeat(60) },
      { role: 'user', content: 'go' },
    ];
    const ask = async (): Promise<{ text: string; cached: number }> => {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: TINY_MODEL_NAME, messages, max_tokens: 8, stream: true, stream_options: { include_usage: true } }),
      });
      expect(r.status).to.equal(200);
      const text = await r.text();
      const usage = text
        .split('\n')
        .filter((l) => l.startsWith('data: {'))
        .map((l) => JSON.parse(l.slice(6)) as { usage?: { prompt_tokens_details?: { cached_tokens?: number } } })
        .find((e) => e.usage !== undefined && e.usage !== null)?.usage;
      return { text, cached: usage?.prompt_tokens_details?.cached_tokens ?? -1 };
    };
    const first = await ask();
    expect(first.text).to.contain('data: [DONE]');
    expect(first.cached).to.equal(0);
    const second = await ask();
    expect(second.cached, 'a repeat of a ~300-token prompt hits at least one 128-token block').to.be.at.least(128);
  });

  it('publishes KV events for what it caches', async () => {
    const kv = fleet!.engines[0]!.kvEvents;
    expect(kv?.endpoint).to.match(/^tcp:\/\/127\.0\.0\.\d+:\d+$/);
    const sub = new Subscriber();
    sub.connect(kv!.endpoint);
    sub.subscribe(kv!.topic);
    try {
      await new Promise((r) => setTimeout(r, 500)); // the subscription reaches the publisher
      const got = (async () => {
        for await (const frames of sub) return frames;
        return [];
      })();
      const body = { model: TINY_MODEL_NAME, prompt: 'fresh words for a new block '.repeat(40), max_tokens: 2 };
      const r = await fetch(`${fleet!.engines[0]!.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(r.status).to.equal(200);
      const frames = await Promise.race([
        got,
        new Promise<never>((_, rej) => setTimeout(() => rej(new Error('no KV event within 10 s')), 10_000)),
      ]);
      expect(frames.length, 'topic, sequence, payload').to.equal(3);
      expect(frames[0]!.toString()).to.equal(kv!.topic);
    } finally {
      sub.close();
    }
  });
});
