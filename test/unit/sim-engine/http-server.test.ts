import { expect } from 'chai';
import { simProfile } from '../../../bench/sim-engine/engine-config.js';
import { SimEngineServer } from '../../../bench/sim-engine/http-server.js';

/** Minimal Prometheus text parser: sample name + label map + value. */
function parseProm(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(m, `bad metrics line: ${line}`).to.not.equal(null);
    const labels: Record<string, string> = {};
    for (const lm of (m![2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]!] = lm[2]!;
    out.push({ name: m![1]!, labels, value: Number(m![3]) });
  }
  return out;
}

function metric(samples: ReturnType<typeof parseProm>, name: string, extra: Record<string, string> = {}): number {
  const s = samples.find((x) => x.name === name && Object.entries(extra).every(([k, v]) => x.labels[k] === v));
  expect(s, `metric ${name}`).to.not.equal(undefined);
  return s!.value;
}

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

const SYSTEM = 'You are a careful assistant that answers briefly. '.repeat(40); // ~2000 chars

describe('sim-engine HTTP server (real engine on port 0)', function () {
  this.timeout(20_000);
  let server: SimEngineServer;
  let base: string;

  before(async () => {
    server = new SimEngineServer({ ...simProfile('gpu-like'), port: 0, model: 'sim-model', timeScale: 0.05, seed: 3 });
    const { url } = await server.start();
    base = url;
  });

  after(async () => {
    await server.stop(1_000);
  });

  const post = (path: string, body: unknown): Promise<Response> =>
    fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('answers health, models and info endpoints with x-engine-id', async () => {
    const h = await fetch(base + '/health');
    expect(h.status).to.equal(200);
    expect(h.headers.get('x-engine-id')).to.equal(`127.0.0.1:${server.port}`);
    const models = (await (await fetch(base + '/v1/models')).json()) as { data: { id: string }[] };
    expect(models.data[0]!.id).to.equal('sim-model');
    for (const p of ['/get_model_info', '/model_info']) {
      const info = (await (await fetch(base + p)).json()) as { model_id: string; model_path: string };
      expect(info.model_id).to.equal('sim-model');
      expect(info.model_path).to.equal('sim-model');
    }
    const si = (await (await fetch(base + '/server_info')).json()) as { block_size: number };
    expect(si.block_size).to.equal(16);
    const load = (await (await fetch(base + '/load')).json()) as { server_load: number };
    expect(load.server_load).to.equal(0);
    const gl = (await (await fetch(base + '/get_load')).json()) as unknown[];
    expect(gl).to.have.length(1);
    expect((await fetch(base + '/nope')).status).to.equal(404);
  });

  it('serves chat completions with usage, and a repeated prefix reports cached tokens', async () => {
    const body = (q: string) => ({
      model: 'whatever',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: q },
      ],
      max_tokens: 5,
      ignore_eos: true,
    });
    const r1 = await post('/v1/chat/completions', body('first question'));
    expect(r1.status).to.equal(200);
    const j1 = (await r1.json()) as {
      object: string;
      model: string;
      choices: { message: { role: string; content: string }; finish_reason: string }[];
      usage: Usage;
    };
    expect(j1.object).to.equal('chat.completion');
    expect(j1.model).to.equal('whatever');
    expect(j1.choices[0]!.message.role).to.equal('assistant');
    expect(j1.choices[0]!.message.content.trim().split(' ')).to.have.length(5);
    expect(j1.choices[0]!.finish_reason).to.equal('length');
    expect(j1.usage.completion_tokens).to.equal(5);
    expect(j1.usage.total_tokens).to.equal(j1.usage.prompt_tokens + 5);
    expect(j1.usage.prompt_tokens_details.cached_tokens).to.equal(0);
    const rendered = `<|system|>\n${SYSTEM}\n<|user|>\nfirst question\n`;
    expect(j1.usage.prompt_tokens).to.equal(Math.ceil(rendered.length / 4));

    const j2 = (await (await post('/v1/chat/completions', body('second question'))).json()) as { usage: Usage };
    const sharedTokens = Math.floor(`<|system|>\n${SYSTEM}\n<|user|>\n`.length / 4);
    expect(j2.usage.prompt_tokens_details.cached_tokens).to.equal(Math.floor(sharedTokens / 16) * 16);
    expect(j2.usage.prompt_tokens_details.cached_tokens).to.be.greaterThan(400);
  });

  it('serves completions with string and token-id prompts; without ignore_eos the length may be shorter', async () => {
    const r = (await (await post('/v1/completions', { prompt: 'abcd'.repeat(10), max_tokens: 3, ignore_eos: true })).json()) as {
      object: string;
      choices: { text: string }[];
      usage: Usage;
    };
    expect(r.object).to.equal('text_completion');
    expect(r.usage.prompt_tokens).to.equal(10);
    expect(r.usage.completion_tokens).to.equal(3);
    const ids = (await (await post('/v1/completions', { prompt: [1, 2, 3, 4, 5], max_tokens: 2 })).json()) as { usage: Usage };
    expect(ids.usage.prompt_tokens).to.equal(5);
    const lengths = new Set<number>();
    for (let i = 0; i < 8; i++) {
      const x = (await (await post('/v1/completions', { prompt: 'z', max_tokens: 20 })).json()) as { usage: Usage };
      expect(x.usage.completion_tokens).to.be.within(1, 20);
      lengths.add(x.usage.completion_tokens);
    }
    expect(lengths.size).to.be.greaterThan(1);
  });

  it('streams SSE chunks, then usage (when asked) and [DONE]', async () => {
    const r = await post('/v1/chat/completions', {
      messages: [{ role: 'user', content: 'stream please' }],
      max_completion_tokens: 4,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.match(/text\/event-stream/);
    const text = await r.text();
    const events = text.split('\n\n').filter((e) => e !== '');
    for (const e of events) expect(e.startsWith('data: ')).to.equal(true);
    expect(events[events.length - 1]).to.equal('data: [DONE]');
    const chunks = events.slice(0, -1).map(
      (e) =>
        JSON.parse(e.slice(6)) as {
          choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[];
          usage?: Usage;
        },
    );
    expect(chunks[0]!.choices[0]!.delta.role).to.equal('assistant');
    const content = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('');
    expect(content.trim().split(' ')).to.have.length(4);
    const usageChunk = chunks[chunks.length - 1]!;
    expect(usageChunk.choices).to.have.length(0);
    expect(usageChunk.usage!.completion_tokens).to.equal(4);
    expect(chunks[chunks.length - 2]!.choices[0]!.finish_reason).to.equal('length');

    // Completions stream without include_usage: no usage chunk.
    const r2 = await post('/v1/completions', { prompt: 'hello', max_tokens: 2, ignore_eos: true, stream: true });
    const ev2 = (await r2.text()).split('\n\n').filter((e) => e !== '');
    expect(ev2[ev2.length - 1]).to.equal('data: [DONE]');
    const c2 = ev2.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { object: string; usage?: Usage; choices: { text: string }[] });
    expect(c2.every((c) => c.usage === undefined && c.object === 'text_completion')).to.equal(true);
    expect(c2.filter((c) => c.choices[0]!.text !== '')).to.have.length(2);
  });

  it('returns JSON 400 errors for bad bodies', async () => {
    for (const [path, body] of [
      ['/v1/chat/completions', '{not json'],
      ['/v1/chat/completions', { messages: 'x' }],
      ['/v1/completions', { prompt: 'x', max_tokens: 0 }],
      ['/v1/completions', { prompt: 'x', max_tokens: 40_000 }],
    ] as const) {
      const r = await post(path, body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      const j = (await r.json()) as { error: { message: string; code: number } };
      expect(j.error.code).to.equal(400);
      expect(r.headers.get('x-engine-id')).to.equal(server.id);
    }
  });

  it('exposes vLLM metrics consistent with the served requests', async () => {
    await post('/admin/reset', {});
    const prompt = 'p'.repeat(64 * 4); // 64 tokens = 4 blocks
    await post('/v1/completions', { prompt, max_tokens: 3, ignore_eos: true });
    await post('/v1/completions', { prompt: prompt + 'tail', max_tokens: 3, ignore_eos: true });
    const res = await fetch(base + '/metrics');
    expect(res.headers.get('content-type')).to.match(/^text\/plain/);
    const samples = parseProm(await res.text());
    for (const s of samples) if (s.name.startsWith('vllm:')) expect(s.labels['model_name']).to.equal('sim-model');
    // The process start time, unlabelled as prometheus_client writes it: within the last hour.
    const started = metric(samples, 'process_start_time_seconds');
    expect(started).to.be.within(Date.now() / 1000 - 3600, Date.now() / 1000);
    expect(metric(samples, 'vllm:num_requests_running')).to.equal(0);
    expect(metric(samples, 'vllm:num_requests_waiting')).to.equal(0);
    expect(metric(samples, 'vllm:kv_cache_usage_perc')).to.equal(0);
    expect(metric(samples, 'vllm:prefix_cache_queries_total')).to.equal(64 + 65);
    expect(metric(samples, 'vllm:prefix_cache_hits_total')).to.equal(64);
    expect(metric(samples, 'vllm:prompt_tokens_total')).to.equal(64 + 65);
    expect(metric(samples, 'vllm:generation_tokens_total')).to.equal(6);
    expect(metric(samples, 'vllm:request_success_total', { finished_reason: 'length' })).to.equal(2);
    expect(metric(samples, 'vllm:num_preemptions_total')).to.equal(0);
    expect(metric(samples, 'vllm:cache_config_info', { block_size: '16', num_gpu_blocks: '4096' })).to.equal(1);
    expect(metric(samples, 'vllm:time_to_first_token_seconds_count')).to.equal(2);
    expect(metric(samples, 'vllm:time_to_first_token_seconds_bucket', { le: '+Inf' })).to.equal(2);
    const stats = (await (await fetch(base + '/stats')).json()) as { requestsServed: number; cachedTokens: number; ttftSamples: number };
    expect(stats).to.include({ requestsServed: 2, cachedTokens: 64, ttftSamples: 2 });
  });

  it('freezes metrics, changes KV capacity at runtime and resets', async () => {
    await post('/admin/freeze-metrics', {});
    await post('/v1/completions', { prompt: 'q'.repeat(400), max_tokens: 1 });
    let samples = parseProm(await (await fetch(base + '/metrics')).text());
    const frozenCount = metric(samples, 'vllm:time_to_first_token_seconds_count');
    const live = (await (await fetch(base + '/stats')).json()) as { ttftSamples: number };
    expect(live.ttftSamples).to.equal(frozenCount + 1);
    await post('/admin/unfreeze-metrics', {});
    samples = parseProm(await (await fetch(base + '/metrics')).text());
    expect(metric(samples, 'vllm:time_to_first_token_seconds_count')).to.equal(frozenCount + 1);

    const cfg = await post('/admin/config', { kv_cache_blocks: 5 });
    expect(cfg.status).to.equal(200);
    expect(((await cfg.json()) as { kvCacheBlocks: number }).kvCacheBlocks).to.equal(5);
    samples = parseProm(await (await fetch(base + '/metrics')).text());
    expect(metric(samples, 'vllm:cache_config_info', { num_gpu_blocks: '5' })).to.equal(1);
    const stats = (await (await fetch(base + '/stats')).json()) as { kvFreeCachedBlocks: number };
    expect(stats.kvFreeCachedBlocks).to.be.at.most(5);
    expect((await post('/admin/config', { kv_cache_blocks: 0 })).status).to.equal(400);
    expect((await post('/admin/config', { block_size: 32 })).status).to.equal(400);
    await post('/admin/config', { kv_cache_blocks: 4096 });

    await post('/admin/reset', {});
    const after = (await (await fetch(base + '/stats')).json()) as { requestsServed: number; kvFreeCachedBlocks: number };
    expect(after).to.include({ requestsServed: 0, kvFreeCachedBlocks: 0 });
  });

  it('aborts the engine request when the client disconnects mid-stream', async () => {
    await post('/admin/config', { time_scale: 1 });
    try {
      const before = (await (await fetch(base + '/stats')).json()) as { requestsAborted: number };
      const ac = new AbortController();
      const res = await fetch(base + '/v1/completions', {
        method: 'POST',
        body: JSON.stringify({ prompt: 'long one', max_tokens: 2000, ignore_eos: true, stream: true }),
        signal: ac.signal,
      });
      const reader = res.body!.getReader();
      await reader.read(); // first token arrived: the request is running
      ac.abort();
      let stats = { running: 1, requestsAborted: before.requestsAborted };
      for (let i = 0; i < 100 && stats.running > 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
        stats = (await (await fetch(base + '/stats')).json()) as typeof stats;
      }
      expect(stats.running).to.equal(0);
      expect(stats.requestsAborted).to.equal(before.requestsAborted + 1);
    } finally {
      await post('/admin/config', { time_scale: 0.05 });
    }
  });

  it('holds a text request for --tokenize-overhead-ms before the scheduler sees it, and drops it if the client leaves meanwhile', async () => {
    const slow = new SimEngineServer({ ...simProfile('gpu-like'), port: 0, tokenizeOverheadMs: 400, timeScale: 1 });
    await slow.start();
    try {
      type Stats = { running: number; waiting: number; requestsServed: number; requestsAborted: number };
      const stats = async (): Promise<Stats> => (await (await fetch(slow.url + '/stats')).json()) as Stats;
      const t0 = performance.now();
      const pending = fetch(slow.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: 'hello', max_tokens: 1 }) });
      await new Promise((r) => setTimeout(r, 100));
      const during = await stats();
      expect(during.running + during.waiting, 'not yet at the scheduler').to.equal(0);
      const res = await pending;
      expect(res.status).to.equal(200);
      await res.json();
      expect(performance.now() - t0).to.be.at.least(400);
      expect((await stats()).requestsServed).to.equal(1);

      // Token-id prompts need no tokenization: they reach the scheduler at once.
      const ids = fetch(slow.url + '/v1/completions', {
        method: 'POST',
        body: JSON.stringify({ prompt: [5, 6, 7], max_tokens: 200, ignore_eos: true }),
      });
      await new Promise((r) => setTimeout(r, 100));
      const idsDuring = await stats();
      expect(idsDuring.running + idsDuring.waiting, 'token ids skip the overhead').to.equal(1);
      await (await ids).json();

      const gone = new AbortController();
      const left = fetch(slow.url + '/v1/completions', {
        method: 'POST',
        body: JSON.stringify({ prompt: 'bye', max_tokens: 1 }),
        signal: gone.signal,
      }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
      gone.abort();
      await left;
      await new Promise((r) => setTimeout(r, 450));
      const after = await stats();
      expect(after.requestsServed + after.running + after.waiting, 'never submitted').to.equal(2);
    } finally {
      await slow.stop(500);
    }
  });

  it('rejects other models only with strictModel', async () => {
    const strict = new SimEngineServer({
      ...simProfile('gpu-like'),
      port: 0,
      model: 'm1',
      strictModel: true,
      timeScale: 0.05,
      id: 'strict-engine',
    });
    await strict.start();
    try {
      const bad = await fetch(strict.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: 'm2', prompt: 'x' }) });
      expect(bad.status).to.equal(404);
      expect(bad.headers.get('x-engine-id')).to.equal('strict-engine');
      const ok = await fetch(strict.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: 'm1', prompt: 'x' }) });
      expect(ok.status).to.equal(200);
    } finally {
      await strict.stop(500);
    }
  });
});
