/**
 * The KV-event path end to end against the simulator over real ZMQ sockets on loopback:
 * engines publish vLLM-format events, the subscriber feeds the precise index, and the
 * index's predicted hits are compared with the engines' own cached_tokens. Also: a gap in
 * the stream and an engine restart leave no stale affinity.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvEventSubscriber } from '../../src/kv-events/kv-event-subscriber.js';
import { PreciseAffinity, type ModelTokenization } from '../../src/precise-index/precise-affinity.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { createTokenBlockHasher } from '../../src/tokenization/token-block-hasher.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng } from '../../src/util/rng.js';
import { simProfile } from '../../bench/sim-engine/engine-config.js';
import { SimEngineServer } from '../../bench/sim-engine/http-server.js';
import { defaultConfig } from '../../src/config/default-config.js';
import { createScheduler } from '../../src/compose/create-scheduler.js';
import { writeTinyTokenizer } from '../kit/tiny-tokenizer.js';
import { Registry } from 'prom-client';
import { PRECISE_INDEX_METRICS, registerKvEventMetrics } from '../../src/kv-events/kv-event-metrics.js';

/** The value of one exposition line `name{labels} value` (labels as written, in order). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const BS = 16;
const MODEL = 'tiny';
const SYSTEMS = [0, 1, 2, 3, 4, 5].map((i) => `System prompt ${i}: you are a helpful assistant for the documents below. `.repeat(6 + i));

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

describe('kv events with the simulator (real ZMQ on loopback)', function () {
  this.timeout(60_000);
  let dir: string;
  const engines: SimEngineServer[] = [];
  let affinity: PreciseAffinity;
  let sub: KvEventSubscriber;
  const applied = [0, 0];
  const base = [0, 0];

  const engineOpts = (kvPort: number, port = 0) => ({
    ...simProfile('gpu-like'),
    port,
    model: MODEL,
    timeScale: 0.02,
    blockSize: BS,
    kvCacheBlocks: 96,
    tokenizerDir: dir,
    kvEventsPort: kvPort,
  });

  /** Waits until the subscriber applied every message the engines sent. */
  async function waitApplied(): Promise<void> {
    await sleep(10);
    const deadline = Date.now() + 3000;
    const behind = (): boolean => engines.some((e, i) => applied[i]! - base[i]! < (e.kvPublisher?.sent ?? 0));
    while (behind() && Date.now() < deadline) await sleep(5);
  }

  async function chat(e: SimEngineServer, system: string, user: string): Promise<number> {
    const r = await fetch(`${e.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
        max_tokens: 3,
        ignore_eos: true,
      }),
    });
    expect(r.status).to.equal(200);
    const j = (await r.json()) as { usage: { prompt_tokens_details: { cached_tokens: number } } };
    return j.usage.prompt_tokens_details.cached_tokens;
  }

  function predictedTokens(e: number, system: string, user: string): number {
    const rk = affinity.requestKeys(MODEL, {
      kind: 'chat',
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ],
    })!;
    return affinity.events.match(rk.keys)[e]! * BS;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kv-sim-'));
    writeTinyTokenizer(dir);
    const models = new Map<string, ModelTokenization>([[MODEL, { tokenizer: await ModelTokenizer.fromDirectory(dir), blockSize: BS }]]);
    affinity = new PreciseAffinity(
      { mode: 'precise', speculativeTtlMs: 1000, resyncWindowMs: 60_000, maxBlocks: 512, endpoints: 2 },
      await createTokenBlockHasher(),
      models,
      () => 0,
    );
    for (let i = 0; i < 2; i++) {
      const s = new SimEngineServer(engineOpts(0));
      await s.start();
      engines.push(s);
    }
    sub = new KvEventSubscriber(affinity.events, { clock: systemClock, onApplied: (i) => applied[i]!++ });
    sub.setSources(
      engines.map((e, i) => ({ endpointIndex: i, endpointId: e.id, url: e.kvPublisher!.endpoint, topic: 'kv-events', model: MODEL })),
    );
    await sleep(300); // SUB connects asynchronously; events before that would be lost
  });

  after(async () => {
    sub?.stop();
    await Promise.all(engines.map((e) => e.stop(500)));
    rmSync(dir, { recursive: true, force: true });
  });

  it("predicts every request's cached tokens exactly, under eviction", async () => {
    const rng = seededRng(42);
    let ok = 0;
    let hits = 0;
    const n = 60;
    for (let i = 0; i < n; i++) {
      const e = Math.floor(rng.next() * 2);
      const sys = SYSTEMS[Math.floor(rng.next() * SYSTEMS.length)]!;
      const user = `question ${Math.floor(rng.next() * 4)}`;
      const predicted = predictedTokens(e, sys, user);
      const cached = await chat(engines[e]!, sys, user);
      if (predicted === cached) ok++;
      if (cached > 0) hits++;
      await waitApplied();
    }
    const stats = sub.stats();
    expect(stats.every((s) => s.gaps === 0 && s.decodeErrors === 0)).to.equal(true);
    expect(stats.reduce((a, s) => a + s.events.removed, 0)).to.be.greaterThan(0); // evictions happened
    expect(hits).to.be.greaterThan(10);
    expect(ok).to.equal(n);
  });

  it("a gap in the stream drops that engine's entries (no stale affinity) and marks it resyncing", async () => {
    const sys = SYSTEMS[0]!;
    await chat(engines[0]!, sys, 'warm');
    await waitApplied();
    expect(predictedTokens(0, sys, 'warm')).to.be.greaterThan(0);
    engines[0]!.kvPublisher!.pause();
    await chat(engines[0]!, SYSTEMS[5]!, 'lost events');
    await sleep(20);
    engines[0]!.kvPublisher!.resume();
    await chat(engines[0]!, SYSTEMS[4]!, 'after the gap');
    await waitApplied();
    expect(sub.stats()[0]!.gaps).to.equal(1);
    expect(affinity.events.state(0)).to.equal('resyncing');
    expect(predictedTokens(0, sys, 'warm')).to.equal(0);
    expect(affinity.events.state(1)).to.equal('synced');
  });

  it('an engine restart (disconnect, then a stream from sequence 0) leaves 0 predicted hits on the empty engine', async () => {
    const sys = SYSTEMS[2]!;
    await chat(engines[1]!, sys, 'before restart');
    await waitApplied();
    expect(predictedTokens(1, sys, 'before restart')).to.be.greaterThan(0);
    const old = engines[1]!;
    const kvPort = Number(old.kvPublisher!.endpoint.split(':').pop());
    const httpPort = old.port;
    await old.stop(200);
    const deadline = Date.now() + 5000;
    while (sub.stats()[1]!.disconnects === 0 && Date.now() < deadline) await sleep(20);
    expect(sub.stats()[1]!.disconnects).to.equal(1);
    expect(predictedTokens(1, sys, 'before restart')).to.equal(0);
    base[1] = applied[1]!;
    const fresh = new SimEngineServer(engineOpts(kvPort, httpPort));
    await fresh.start();
    engines[1] = fresh;
    const reconnect = Date.now() + 5000;
    while (!sub.stats()[1]!.connected && Date.now() < reconnect) await sleep(20);
    await sleep(100); // the subscription reaches the publisher just after the TCP connect
    const cached = await chat(fresh, sys, 'before restart');
    expect(cached).to.equal(0);
    await waitApplied();
    expect(affinity.events.state(1)).to.equal('synced'); // first message had sequence 0
    expect(predictedTokens(1, sys, 'before restart')).to.equal(await chat(fresh, sys, 'before restart'));
  });

  it('the precise-cache-aware preset discovers the publishers and routes a sibling to the engine whose events hold its prefix', async () => {
    // A prompt sharing no block with what the engines cached before this router subscribed:
    // blocks extending an ancestry the router never saw cannot be keyed (docs/kv-events.md).
    const sys = 'A brand new system prompt for the router that joined late. '.repeat(8);
    const holder = engines[0]!;
    const config = defaultConfig({
      endpoints: engines.map((e) => ({ address: `127.0.0.1:${e.port}`, models: [MODEL] })),
      strategy: {
        name: 'precise-cache-aware',
        plugins: {
          'prefix-cache': {
            mode: 'precise',
            models: [{ name: MODEL, tokenizerDir: dir, blockSize: BS }],
            // Publisher ports discovered from each engine's /kv_event_sources.
            kvEvents: { discover: true },
            resyncWindowMs: 0,
          },
        },
      },
    });
    const scheduler = createScheduler(config, { clock: systemClock, rng: seededRng(1) });
    scheduler.start();
    try {
      const deadline = Date.now() + 5000;
      // The new subscription joins mid-stream: a message after it connects marks the engines in sync.
      await sleep(300);
      await chat(engines[1]!, SYSTEMS[1]!, 'another');
      await chat(holder, sys, 'seed the cache');
      let t: ReturnType<typeof scheduler.route>;
      do {
        await sleep(50);
        const messages = [
          { role: 'system', content: sys },
          { role: 'user', content: 'seed the cache' },
        ];
        t = scheduler.route({
          requestId: `s${Date.now()}`,
          model: MODEL,
          prefix: sys,
          promptChars: sys.length,
          promptTokens: 100,
          stream: false,
          arrivalMs: 0,
          promptInput: { kind: 'chat', messages },
        });
        t.finish({ aborted: false, status: 200 });
      } while (t.decision.matchedBlocks === 0 && Date.now() < deadline);
      expect(t.decision.endpoint.port).to.equal(holder.port);
      const entry = scheduler.pluginStates().find((p) => p.type === 'precise-prefix-cache');
      expect(entry?.name, 'the preset names the precise plugin like the approximate one').to.equal('prefix-cache');
      const dbg = entry!.state as { ready: boolean; streams: { connected: boolean }[]; tokenization: { requests: number } };
      expect(dbg.ready).to.equal(true);
      expect(dbg.streams.map((s) => s.connected)).to.deep.equal([true, true]);
      expect(dbg.tokenization.requests).to.be.greaterThan(0);
      expect(t.decision.matchedBlocks).to.be.greaterThan(0);

      // A repeat of the request: its system prompt comes from the tokenizer's piece cache.
      const again = scheduler.route({
        requestId: 'again',
        model: MODEL,
        prefix: sys,
        promptChars: sys.length,
        promptTokens: 100,
        stream: false,
        arrivalMs: 0,
        promptInput: {
          kind: 'chat',
          messages: [
            { role: 'system', content: sys },
            { role: 'user', content: 'a follow-up' },
          ],
        },
      });
      again.finish({ aborted: false, status: 200 });
      // The same state as Prometheus series, through the registry the app's telemetry uses.
      const registry = new Registry();
      registerKvEventMetrics(registry, scheduler.service(PRECISE_INDEX_METRICS)!);
      const text = await registry.metrics();
      const ep0 = `127.0.0.1:${engines[0]!.port}`;
      const ep1 = `127.0.0.1:${engines[1]!.port}`;
      for (const ep of [ep0, ep1]) {
        expect(sample(text, `cacheroute_kv_event_subscriber_connected{endpoint="${ep}"}`), ep).to.equal(1);
        // Joined mid-stream: the first message was a gap (a late subscriber), nothing else.
        expect(sample(text, `cacheroute_kv_event_resyncs_total{endpoint="${ep}",reason="gap"}`), ep).to.equal(1);
        expect(sample(text, `cacheroute_kv_event_resyncs_total{endpoint="${ep}",reason="disconnect"}`), ep).to.equal(0);
        expect(sample(text, `cacheroute_kv_event_dropped_messages_total{endpoint="${ep}"}`), ep).to.equal(0);
        expect(sample(text, `cacheroute_kv_event_messages_total{endpoint="${ep}"}`), ep).to.be.greaterThan(0);
        expect(sample(text, `cacheroute_kv_event_lag_seconds_count{endpoint="${ep}"}`), ep).to.equal(
          sample(text, `cacheroute_kv_event_messages_total{endpoint="${ep}"}`),
        );
      }
      expect(sample(text, `cacheroute_kv_events_total{endpoint="${ep0}",type="block_stored"}`)).to.be.greaterThan(0);
      const st = scheduler.pluginStates().find((p) => p.type === 'precise-prefix-cache')!.state as {
        engines: { endpointId: string; blocks: number }[];
        tokenization: { requests: number };
      };
      expect(sample(text, `cacheroute_precise_index_blocks{endpoint="${ep0}"}`)).to.equal(
        st.engines.find((e) => e.endpointId === ep0)!.blocks,
      );
      expect(sample(text, `cacheroute_precise_index_blocks{endpoint="${ep0}"}`)).to.be.greaterThan(0);
      expect(sample(text, `cacheroute_precise_tokenization_seconds_count{model="${MODEL}"}`)).to.equal(st.tokenization.requests);
      expect(sample(text, `cacheroute_tokenizer_cache_lookups_total{model="${MODEL}",cache="piece",result="hit"}`)).to.be.greaterThan(0);
      expect(text).to.not.include('brand new system prompt');
    } finally {
      scheduler.stop();
    }
  });
});

describe('precise-prefix-cache mode auto (real ZMQ on loopback)', function () {
  this.timeout(30_000);
  it('scores hybrid exactly where an engine publishes events and its model has a tokenizer, approximate elsewhere', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kv-auto-'));
    writeTinyTokenizer(dir);
    const withEvents = new SimEngineServer({
      ...simProfile('gpu-like'),
      port: 0,
      model: MODEL,
      timeScale: 0.02,
      blockSize: BS,
      kvCacheBlocks: 96,
      tokenizerDir: dir,
      kvEventsPort: 0,
    });
    const noEvents = new SimEngineServer({
      ...simProfile('gpu-like'),
      port: 0,
      model: MODEL,
      timeScale: 0.02,
      blockSize: BS,
      kvCacheBlocks: 96,
      tokenizerDir: dir,
    });
    const otherModel = new SimEngineServer({
      ...simProfile('gpu-like'),
      port: 0,
      model: 'untokenized',
      timeScale: 0.02,
      blockSize: BS,
      kvCacheBlocks: 96,
      tokenizerDir: dir,
      kvEventsPort: 0,
    });
    const all = [withEvents, noEvents, otherModel];
    await Promise.all(all.map((e) => e.start()));
    const config = defaultConfig({
      endpoints: [
        { address: `127.0.0.1:${withEvents.port}`, models: [MODEL] },
        { address: `127.0.0.1:${noEvents.port}`, models: [MODEL] },
        { address: `127.0.0.1:${otherModel.port}`, models: ['untokenized'] },
      ],
      // No mode, no kvEvents: auto, publishers discovered.
      strategy: {
        name: 'precise-cache-aware',
        plugins: { 'prefix-cache': { models: [{ name: MODEL, tokenizerDir: dir, blockSize: BS }], resyncWindowMs: 0 } },
      },
    });
    const scheduler = createScheduler(config, { clock: systemClock, rng: seededRng(3) });
    scheduler.start();
    try {
      const state = () =>
        scheduler.pluginStates().find((p) => p.type === 'precise-prefix-cache')!.state as {
          mode: string;
          indexMode: string;
          endpointModes: Record<string, string>;
          streams: { endpointId: string }[];
        };
      const deadline = Date.now() + 5000;
      while (state().streams.length === 0 && Date.now() < deadline) await sleep(20);
      await sleep(300);
      // One message after the subscription connects puts the engine's stream in sync.
      const body = (content: string) => ({
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 2 }),
      });
      let st = state();
      while (st.endpointModes[`127.0.0.1:${withEvents.port}`] !== 'hybrid' && Date.now() < deadline) {
        await fetch(`${withEvents.url}/v1/chat/completions`, body(`tick ${Date.now()} `.repeat(20)));
        await sleep(50);
        st = state();
      }
      expect(st).to.include({ mode: 'auto', indexMode: 'hybrid' });
      expect(
        st.streams.map((s) => s.endpointId),
        'subscribed only where events exist and the model is tokenized',
      ).to.deep.equal([`127.0.0.1:${withEvents.port}`]);
      expect(st.endpointModes).to.deep.equal({
        [`127.0.0.1:${withEvents.port}`]: 'hybrid',
        [`127.0.0.1:${noEvents.port}`]: 'approximate',
        [`127.0.0.1:${otherModel.port}`]: 'approximate',
      });
    } finally {
      scheduler.stop();
      await Promise.all(all.map((e) => e.stop(300)));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('kv events under a storm (real ZMQ on loopback)', function () {
  this.timeout(30_000);
  it('keeps the queue bounded: an overflow drops it and resyncs the engine instead of growing', async () => {
    const { Publisher } = await import('zeromq');
    const { encodeKvEventMessage } = await import('../../src/kv-events/kv-event-wire.js');
    const { EventFedIndex } = await import('../../src/precise-index/event-fed-index.js');
    const pub = new Publisher({ sendHighWaterMark: 1_000_000, linger: 0 });
    await pub.bind('tcp://127.0.0.1:*');
    const idx = new EventFedIndex(await createTokenBlockHasher(), { endpoints: 1 });
    let maxQueued = 0;
    const sub = new KvEventSubscriber(idx, { clock: systemClock, maxQueue: 50, batchMax: 5 });
    sub.setSources([{ endpointIndex: 0, endpointId: 'storm', url: pub.lastEndpoint!, topic: 'kv-events', model: 'm' }]);
    await sleep(300);
    const tokens = Array.from({ length: 16 }, (_, i) => i);
    for (let s = 0; s < 3000; s++) {
      await pub.send(
        encodeKvEventMessage('kv-events', BigInt(s), s, [
          { type: 'BlockStored', blockHashes: [BigInt(s + 1)], parentBlockHash: null, tokenIds: tokens, blockSize: 16 },
        ]),
      );
      if (s % 100 === 0) maxQueued = Math.max(maxQueued, sub.stats()[0]!.queued);
    }
    await sleep(500);
    const st = sub.stats()[0]!;
    sub.stop();
    pub.close();
    expect(st.overflows).to.be.greaterThan(0);
    expect(maxQueued).to.be.at.most(50);
    expect(idx.stats(0).resyncs).to.be.greaterThan(0);
    expect(st.messages).to.be.lessThan(3000); // dropped, not buffered without bound
    expect(st.messages + st.droppedMessages, 'every message applied or counted as dropped').to.equal(3000);
  });
});
