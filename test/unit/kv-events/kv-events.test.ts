import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { decodeKvEventMessage, encodeKvEventMessage, KvWireError } from '../../../src/kv-events/kv-event-wire.js';
import { SequenceTracker } from '../../../src/kv-events/sequence-tracker.js';
import { EventFedIndex } from '../../../src/precise-index/event-fed-index.js';
import { PreciseAffinity, type ModelTokenization } from '../../../src/precise-index/precise-affinity.js';
import { detectContentFormat, ModelTokenizer } from '../../../src/tokenization/model-tokenizer.js';
import { createTokenBlockHasher, type TokenBlockHasher } from '../../../src/tokenization/token-block-hasher.js';
import {
  effectiveIndexMode,
  preciseOptions,
  precisePrefixCache,
  PrecisePrefixCachePlugin,
  type PrecisePrefixCacheOptions,
} from '../../../src/plugins/multi/precise-prefix-cache-plugin.js';
import { BlockHasher } from '../../../src/prefix-cache/block-hasher.js';
import { PrefixIndex } from '../../../src/prefix-cache/prefix-index.js';
import type { Endpoint, RouteDecision, RouteRequest } from '../../../src/core/types.js';
import type { LoadSnapshot } from '../../../src/endpoints/load.js';
import type { CycleState } from '../../../src/framework/types.js';
import { systemClock } from '../../../src/util/clock.js';
import { seededRng } from '../../../src/util/rng.js';
import { configError, parseWith } from '../../../src/util/schema.js';

/** The plugin's options from raw parameters, as the plugin graph validates them (field paths under `base`). */
function parsePrecisePrefixCacheParams(base: string, raw: Record<string, unknown>): PrecisePrefixCacheOptions {
  const r = parseWith(precisePrefixCache.parameters, raw, base);
  if (!r.ok) throw configError(r.problems);
  return preciseOptions(r.value);
}
import { writeTinyTokenizer } from '../../kit/tiny-tokenizer.js';

describe('kv-events: wire format', () => {
  it('round-trips a vLLM-style message (3 frames, BE sequence, [ts, events, rank])', () => {
    const big = 0xfedcba9876543210n;
    const frames = encodeKvEventMessage('kv-events', 7n, 1234.5, [
      { type: 'BlockStored', blockHashes: [big, 5n], parentBlockHash: null, tokenIds: [1, 2, 3, 4], blockSize: 2 },
      { type: 'BlockRemoved', blockHashes: [big] },
      { type: 'AllBlocksCleared' },
    ]);
    expect(frames).to.have.length(3);
    expect([...frames[1]]).to.deep.equal([0, 0, 0, 0, 0, 0, 0, 7]);
    const b = decodeKvEventMessage(frames);
    expect(b.seq).to.equal(7n);
    expect(b.topic).to.equal('kv-events');
    expect(b.ts).to.equal(1234.5);
    expect(b.dpRank).to.equal(0);
    expect(b.events.map((e) => e.type)).to.deep.equal(['BlockStored', 'BlockRemoved', 'AllBlocksCleared']);
    const s = b.events[0]!;
    if (s.type !== 'BlockStored') throw new Error('type');
    expect(s.blockHashes).to.deep.equal([big, 5n]);
    expect(s.tokenIds).to.deep.equal([1, 2, 3, 4]);
    expect(s.parentBlockHash).to.equal(null);
  });

  it('rejects malformed messages with KvWireError, never anything else', () => {
    const ok = encodeKvEventMessage('t', 0n, 1, [
      { type: 'BlockStored', blockHashes: [1n], parentBlockHash: null, tokenIds: [1, 2], blockSize: 2 },
    ]);
    expect(() => decodeKvEventMessage([ok[0], ok[1]])).to.throw(KvWireError);
    expect(() => decodeKvEventMessage([ok[0], Buffer.alloc(4), ok[2]])).to.throw(KvWireError);
    expect(() => decodeKvEventMessage([ok[0], ok[1], Buffer.from([0xc1])])).to.throw(KvWireError);
    // token count inconsistent with blocks × block size
    const bad = encodeKvEventMessage('t', 0n, 1, [
      { type: 'BlockStored', blockHashes: [1n, 2n], parentBlockHash: null, tokenIds: [1, 2], blockSize: 2 },
    ]);
    expect(() => decodeKvEventMessage(bad)).to.throw(KvWireError, /token ids/);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          decodeKvEventMessage([ok[0], ok[1], Buffer.from(bytes)]);
        } catch (err) {
          return err instanceof KvWireError;
        }
        return true;
      }),
      { seed: 11, numRuns: 300 },
    );
  });

  it('sequence tracker: in order, gaps, restarts at 0, first message after connect', () => {
    const t = new SequenceTracker();
    expect(t.observe(5n)).to.equal('gap'); // joined late: may have missed stores
    expect(t.observe(6n)).to.equal('in-order');
    expect(t.observe(8n)).to.equal('gap');
    expect(t.observe(9n)).to.equal('in-order');
    expect(t.observe(0n)).to.equal('fresh'); // engine restarted
    expect(t.observe(1n)).to.equal('in-order');
    t.reset();
    expect(t.observe(2n)).to.equal('gap');
  });
});

describe('kv-events: event-fed index', () => {
  let hasher: TokenBlockHasher;
  before(async () => {
    hasher = await createTokenBlockHasher();
  });

  const tokens = (n: number, seed: number): number[] => Array.from({ length: n }, (_, i) => (i * 31 + seed) % 1000);

  it('matches a request exactly as far as the engine stored its blocks, across chunked stores', () => {
    const idx = new EventFedIndex(hasher, { endpoints: 2 });
    const t = tokens(10, 1); // 5 blocks of 2
    idx.apply(
      1,
      'm',
      [
        {
          type: 'BlockStored',
          blockHashes: [11n, 12n],
          parentBlockHash: null,
          tokenIds: t.slice(0, 4),
          blockSize: 2,
          loraName: null,
          medium: 'GPU',
          hasExtraKeys: false,
          groupIdx: 0,
        },
      ],
      0,
    );
    idx.apply(
      1,
      'm',
      [
        {
          type: 'BlockStored',
          blockHashes: [13n],
          parentBlockHash: 12n,
          tokenIds: t.slice(4, 6),
          blockSize: 2,
          loraName: null,
          medium: 'GPU',
          hasExtraKeys: false,
          groupIdx: 0,
        },
      ],
      0,
    );
    const req = hasher.hash('m', t, 2);
    expect([...idx.match(req)]).to.deep.equal([0, 3]);
    // another model never matches
    expect([...idx.match(hasher.hash('other', t, 2))]).to.deep.equal([0, 0]);
    // eviction of a middle block cuts the match there
    idx.apply(1, 'm', [{ type: 'BlockRemoved', blockHashes: [12n], medium: 'GPU', groupIdx: 0 }], 0);
    expect([...idx.match(req)]).to.deep.equal([0, 1]);
    idx.index.checkInvariants();
  });

  it('blocks with an unknown parent, extra keys or another tier never match', () => {
    const idx = new EventFedIndex(hasher, { endpoints: 1 });
    const t = tokens(4, 2);
    idx.apply(
      0,
      'm',
      [
        {
          type: 'BlockStored',
          blockHashes: [2n],
          parentBlockHash: 1n,
          tokenIds: t.slice(2, 4),
          blockSize: 2,
          loraName: null,
          medium: 'GPU',
          hasExtraKeys: false,
          groupIdx: 0,
        },
      ],
      0,
    );
    idx.apply(
      0,
      'm',
      [
        {
          type: 'BlockStored',
          blockHashes: [3n],
          parentBlockHash: null,
          tokenIds: t.slice(0, 2),
          blockSize: 2,
          loraName: null,
          medium: 'GPU',
          hasExtraKeys: true,
          groupIdx: 0,
        },
      ],
      0,
    );
    idx.apply(
      0,
      'm',
      [
        {
          type: 'BlockStored',
          blockHashes: [4n],
          parentBlockHash: null,
          tokenIds: t.slice(0, 2),
          blockSize: 2,
          loraName: null,
          medium: 'CPU',
          hasExtraKeys: false,
          groupIdx: 0,
        },
      ],
      0,
    );
    expect(idx.match(hasher.hash('m', t, 2))[0]).to.equal(0);
    expect(idx.stats(0).unmatchableBlocks).to.equal(2);
  });

  it('resync drops every entry and marks the engine untrusted; a fresh stream trusts it again', () => {
    const idx = new EventFedIndex(hasher, { endpoints: 1 });
    const t = tokens(4, 3);
    idx.markFresh(0);
    idx.apply(
      0,
      'm',
      [
        {
          type: 'BlockStored',
          blockHashes: [1n, 2n],
          parentBlockHash: null,
          tokenIds: t,
          blockSize: 2,
          loraName: null,
          medium: null,
          hasExtraKeys: false,
          groupIdx: null,
        },
      ],
      0,
    );
    expect(idx.match(hasher.hash('m', t, 2))[0]).to.equal(2);
    idx.resync(0, 100);
    expect(idx.state(0)).to.equal('resyncing');
    expect(idx.match(hasher.hash('m', t, 2))[0]).to.equal(0);
    expect(idx.stats(0)).to.include({ blocks: 0, resyncs: 1 });
    idx.markFresh(0);
    expect(idx.state(0)).to.equal('synced');
  });

  it('late subscriber: blocks extending chains it never saw stay unmatchable; new roots match; a cache clear makes it complete', () => {
    const idx = new EventFedIndex(hasher, { endpoints: 1 });
    const seq = new SequenceTracker();
    const old = tokens(8, 5); // cached before the router subscribed: blocks 101n..104n
    const fresh = tokens(6, 6);
    // First message the router hears has sequence 40: the engine may hold blocks it never heard of.
    expect(seq.observe(40n)).to.equal('gap');
    idx.resync(0, 0);
    const g = { loraName: null, medium: 'GPU', hasExtraKeys: false, groupIdx: 0 } as const;
    // A request extends the pre-join chain (parent 102n unknown) by two blocks, and a brand-new prompt is stored.
    idx.apply(
      0,
      'm',
      [{ type: 'BlockStored', blockHashes: [103n, 104n], parentBlockHash: 102n, tokenIds: old.slice(4, 8), blockSize: 2, ...g }],
      1,
    );
    idx.apply(
      0,
      'm',
      [{ type: 'BlockStored', blockHashes: [201n, 202n, 203n], parentBlockHash: null, tokenIds: fresh, blockSize: 2, ...g }],
      1,
    );
    expect(idx.match(hasher.hash('m', old, 2))[0], 'no hit predicted for a chain whose ancestry is unknown').to.equal(0);
    expect(idx.match(hasher.hash('m', fresh, 2))[0]).to.equal(3);
    expect(idx.stats(0)).to.include({ state: 'resyncing', blocks: 5, unmatchableBlocks: 2 });
    // The engine evicts the orphans: they leave the ledger.
    idx.apply(0, 'm', [{ type: 'BlockRemoved', blockHashes: [104n, 103n], medium: 'GPU', groupIdx: 0 }], 2);
    expect(idx.stats(0)).to.include({ blocks: 3, unmatchableBlocks: 0 });
    // A cache reset: the engine is empty, so everything from here is known: synced at once.
    idx.apply(0, 'm', [{ type: 'AllBlocksCleared' }], 3);
    expect(idx.stats(0)).to.include({ state: 'synced', blocks: 0 });
    idx.apply(
      0,
      'm',
      [{ type: 'BlockStored', blockHashes: [301n, 302n, 303n, 304n], parentBlockHash: null, tokenIds: old, blockSize: 2, ...g }],
      4,
    );
    expect(idx.match(hasher.hash('m', old, 2))[0]).to.equal(4);
    idx.index.checkInvariants();
  });

  it('a ledger beyond its bound resyncs instead of growing', () => {
    const idx = new EventFedIndex(hasher, { endpoints: 1, maxBlocksPerEngine: 3 });
    const t = tokens(8, 4);
    const ok = idx.apply(
      0,
      'm',
      [
        {
          type: 'BlockStored',
          blockHashes: [1n, 2n, 3n, 4n],
          parentBlockHash: null,
          tokenIds: t,
          blockSize: 2,
          loraName: null,
          medium: null,
          hasExtraKeys: false,
          groupIdx: null,
        },
      ],
      5,
    );
    expect(ok).to.equal(false);
    expect(idx.stats(0)).to.include({ state: 'resyncing', blocks: 0 });
  });
});

describe('tokenization: model tokenizer', () => {
  let dir: string;
  let tok: ModelTokenizer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kv-tok-'));
    writeTinyTokenizer(dir);
    tok = await ModelTokenizer.fromDirectory(dir, { minCachedPieceChars: 1 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('renders the chat template with the generation prompt', () => {
    expect(
      tok.renderChat([
        { role: 'system', content: 'S' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
      ]),
    ).to.equal('<|system|>\nS<|end|>\n<|user|>\na\nb<|end|>\n<|assistant|>\n');
  });

  it('piece-cached ids equal the library encoding the whole text (property)', () => {
    expect(tok.pieceCache).to.equal(true);
    const piece = fc.constantFrom(
      'You are',
      ' helpful',
      '<|user|>',
      '<|end|>',
      '\n',
      ' the quick',
      'é',
      '🙂',
      '  ',
      'def main():',
      '<s>',
      'x',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), fc.boolean(), (parts, special) => {
        const text = parts.join('');
        const a = tok.encode(text, special);
        const b = tok.encodeWhole(text, special);
        return JSON.stringify(a) === JSON.stringify(b);
      }),
      { seed: 5, numRuns: 300 },
    );
    expect(tok.cacheStats().hits).to.be.greaterThan(0);
  });

  it('a repeated system prompt is tokenized once', () => {
    const sys = { role: 'system', content: 'You are a helpful assistant. '.repeat(50) };
    const before = tok.cacheStats().encodedChars;
    tok.chatTokenIds([sys, { role: 'user', content: 'first' }]);
    const mid = tok.cacheStats().encodedChars;
    tok.chatTokenIds([sys, { role: 'user', content: 'second' }]);
    const after = tok.cacheStats().encodedChars;
    expect(mid - before).to.be.greaterThan(sys.content.length);
    expect(after - mid).to.be.lessThan(20);
  });

  it('content format follows vLLM: templates looping over message content get parts, others joined text', () => {
    expect(detectContentFormat("{% for message in messages %}{{ message['content'] }}{% endfor %}")).to.equal('string');
    expect(
      detectContentFormat(
        "{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for part in m['content'] %}{{ part['text'] }}{% endfor %}{% endif %}{% endfor %}",
      ),
    ).to.equal('openai');
    expect(
      detectContentFormat('{%- for message in messages -%}{%- for c in message.content -%}{{ c.text }}{%- endfor -%}{%- endfor -%}'),
    ).to.equal('openai');
  });

  it('missing or broken files are BAD_CONFIG errors', async () => {
    let err: unknown;
    try {
      await ModelTokenizer.fromDirectory(join(dir, 'nope'));
    } catch (e) {
      err = e;
    }
    expect(err).to.have.property('code', 'BAD_CONFIG');
  });
});

describe('index modes: precise and hybrid affinity', () => {
  let dir: string;
  let models: Map<string, ModelTokenization>;
  let hasher: TokenBlockHasher;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kv-mode-'));
    writeTinyTokenizer(dir);
    hasher = await createTokenBlockHasher();
    models = new Map([['tiny', { tokenizer: await ModelTokenizer.fromDirectory(dir), blockSize: 4 }]]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const input = {
    kind: 'chat' as const,
    messages: [
      { role: 'system', content: 'You are a helpful assistant. Answer the question.' },
      { role: 'user', content: 'hi' },
    ],
  };

  function storeAll(a: PreciseAffinity, e: number, ids: number[], bs: number): void {
    const n = Math.floor(ids.length / bs);
    a.events.apply(
      e,
      'tiny',
      [
        {
          type: 'BlockStored',
          blockHashes: Array.from({ length: n }, (_, i) => BigInt(1000 * (e + 1) + i)),
          parentBlockHash: null,
          tokenIds: ids.slice(0, n * bs),
          blockSize: bs,
          loraName: null,
          medium: 'GPU',
          hasExtraKeys: false,
          groupIdx: 0,
        },
      ],
      0,
    );
  }

  it('precise: synced engines score by events; untrusted ones fall back to the approximate fraction', () => {
    const a = new PreciseAffinity(
      { mode: 'precise', speculativeTtlMs: 1000, resyncWindowMs: 5000, maxBlocks: 512, endpoints: 3 },
      hasher,
      models,
      () => 0,
    );
    const rk = a.requestKeys('tiny', input)!;
    expect(rk.keys.count).to.be.greaterThan(2);
    const ids = models.get('tiny')!.tokenizer.chatTokenIds(input.messages);
    a.events.markFresh(0);
    a.events.markFresh(1);
    storeAll(a, 0, ids, 4);
    const out = new Float64Array(3);
    a.fractions(rk.keys, 0, () => 0.5, out);
    expect(out[0]).to.equal(1);
    expect(out[1]).to.equal(0); // synced, holds nothing: approximate is ignored
    expect(out[2]).to.equal(0.5); // no events yet: approximate
    a.events.resync(0, 10);
    a.fractions(rk.keys, 20, () => 0, out);
    expect(out[0]).to.equal(0); // no stale affinity after the gap
    a.fractions(rk.keys, 10 + 5000, () => 0.25, out);
    expect(out[0]).to.equal(0); // window over: precise again (and empty)
    expect(a.trusted(0, 5010)).to.equal(true);
    // requests the router cannot tokenize
    expect(a.requestKeys('unknown-model', input)).to.equal(undefined);
    expect(a.requestKeys('tiny', undefined)).to.equal(undefined);
  });

  it('memoised keys of a repeated system prompt equal hashing every block afresh', () => {
    const a = new PreciseAffinity(
      { mode: 'precise', speculativeTtlMs: 1000, resyncWindowMs: 5000, maxBlocks: 512, endpoints: 1 },
      hasher,
      models,
      () => 0,
    );
    const tok = models.get('tiny')!.tokenizer;
    const sys = { role: 'system', content: 'You are a helpful assistant. Answer the question using the documents below. '.repeat(8) };
    for (const user of ['one', 'two', 'three', 'a much longer question about the documents below and more']) {
      for (const msgs of [
        [sys, { role: 'user', content: user }],
        [
          { role: 'system', content: sys.content + 'x' },
          { role: 'user', content: user },
        ],
      ]) {
        const rk = a.requestKeys('tiny', { kind: 'chat', messages: msgs })!;
        const ids = tok.chatTokenIds(msgs);
        const ref = hasher.hash('tiny', ids, 4, Math.floor((ids.length - 1) / 4));
        expect(rk.keys.count).to.equal(ref.count);
        expect([...rk.keys.lo]).to.deep.equal([...ref.lo]);
        expect([...rk.keys.hi]).to.deep.equal([...ref.hi]);
      }
    }
  });

  it('memoised keys of completions prompts sharing a long start equal hashing every block afresh', () => {
    const a = new PreciseAffinity(
      { mode: 'precise', speculativeTtlMs: 1000, resyncWindowMs: 5000, maxBlocks: 512, endpoints: 1 },
      hasher,
      models,
      () => 0,
    );
    const tok = models.get('tiny')!.tokenizer;
    const doc = 'Routing requests to engines with cached prefixes saves prefill time and the first token comes sooner. '.repeat(30);
    for (const q of ['one?', 'two?', 'one?', 'a much longer question about the documents above', 'two?']) {
      const prompt = `${doc}Question: ${q}`;
      const rk = a.requestKeys('tiny', { kind: 'completion', prompt })!;
      const ids = tok.encodeWhole(prompt, true);
      const ref = hasher.hash('tiny', ids, 4, Math.floor((ids.length - 1) / 4));
      expect(rk.keys.count).to.equal(ref.count);
      expect([...rk.keys.lo]).to.deep.equal([...ref.lo]);
      expect([...rk.keys.hi]).to.deep.equal([...ref.hi]);
    }
    expect(a.cost().keyMemoHits).to.be.greaterThan(0);
  });

  it('hybrid: a routing decision counts until the engine confirms, evicts, or the TTL passes', () => {
    const a = new PreciseAffinity(
      { mode: 'hybrid', speculativeTtlMs: 1000, resyncWindowMs: 5000, maxBlocks: 512, endpoints: 2 },
      hasher,
      models,
      () => 0,
    );
    a.events.markFresh(0);
    a.events.markFresh(1);
    const rk = a.requestKeys('tiny', input)!;
    const out = new Float64Array(2);
    a.onRouted(1, rk.keys, 0);
    a.fractions(rk.keys, 10, () => 0, out);
    expect(out[1]).to.equal(1);
    expect(out[0]).to.equal(0);
    // engine confirms: speculative entries go, precise entries take over
    storeAll(a, 1, models.get('tiny')!.tokenizer.chatTokenIds(input.messages), 4);
    expect(a.speculativeEntries()).to.equal(0);
    a.fractions(rk.keys, 20, () => 0, out);
    expect(out[1]).to.equal(1);
    // never-confirmed speculation expires
    a.onRouted(0, rk.keys, 100);
    a.fractions(rk.keys, 500, () => 0, out);
    expect(out[0]).to.equal(1);
    a.fractions(rk.keys, 1101, () => 0, out);
    expect(out[0]).to.equal(0);
  });
});

describe('precise-prefix-cache plugin: the approximate index covers what events do not', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kv-plugin-'));
    writeTinyTokenizer(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a routing to a synced endpoint does not feed the approximate index; to an untrusted one, or of an untokenized request, it does', async () => {
    const endpoints: Endpoint[] = [0, 1].map((i) => ({
      id: `127.0.0.${2 + i}:8000`,
      address: `127.0.0.${2 + i}`,
      port: 8000,
      pool: 'p',
      models: ['tiny'],
      index: i,
    }));
    const approx = new PrefixIndex({ endpoints: 2, capacityBlocks: 10_000 });
    const plugin = new PrecisePrefixCachePlugin(
      'p',
      {
        mode: 'precise',
        models: [{ name: 'tiny', tokenizerDir: dir, blockSize: 4 }],
        kvTopic: 'kv-events',
        kvUrls: {},
        speculativeTtlMs: 1000,
        resyncWindowMs: 60_000,
        maxBlocks: 512,
      },
      new BlockHasher({ blockChars: 8, maxBlocks: 64 }),
      approx,
      systemClock,
    );
    plugin.onEndpointsChanged(endpoints);
    plugin.start();
    await plugin.ready;
    plugin.preciseAffinity!.events.markFresh(0); // endpoint 1: no events yet (untrusted)
    const system = 'You are a helpful assistant. Answer the question using the documents below.';
    const route = (e: number, promptInput: RouteRequest['promptInput'] | undefined): void => {
      const request: RouteRequest = {
        requestId: 'r',
        model: 'tiny',
        prefix: system,
        promptChars: system.length,
        promptTokens: 20,
        stream: false,
        arrivalMs: 0,
        ...(promptInput !== undefined ? { promptInput } : {}),
      };
      const st: CycleState = { request, nowMs: 0, rng: seededRng(1), scratch: new Map(), notes: [] };
      plugin.score(
        st,
        endpoints.map((endpoint) => ({ endpoint, load: { inflightRequests: 0, inflightPromptTokens: 0 } as LoadSnapshot })),
      );
      plugin.onRouted(st, { requestId: 'r', endpoint: endpoints[e]! } as unknown as RouteDecision);
    };
    const chat = { kind: 'chat' as const, messages: [{ role: 'system', content: system }] };
    const text = new BlockHasher({ blockChars: 8, maxBlocks: 64 }).hash('tiny', system);
    route(0, chat);
    expect(approx.match(text)[0]).to.equal(0);
    route(1, chat);
    expect(approx.match(text)[1]).to.equal(text.count);
    route(0, undefined);
    expect(approx.match(text)[0]).to.equal(text.count);
    plugin.stop();
  });
});

describe('precise-prefix-cache parameters', () => {
  const ok = { mode: 'hybrid', models: [{ name: 'm', tokenizerDir: '/x', blockSize: 128 }] };
  it('applies defaults and accepts every publisher source', () => {
    const o = parsePrecisePrefixCacheParams('p', { ...ok, kvEvents: { portOffset: 100, discover: true } });
    expect(o).to.include({
      mode: 'hybrid',
      kvTopic: 'kv-events',
      kvPortOffset: 100,
      kvDiscover: true,
      speculativeTtlMs: 10_000,
      resyncWindowMs: 30_000,
      maxBlocks: 512,
    });
  });
  it('rejects bad parameters with the field named', () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ mode: 'hybrid' }, /models/],
      [{ mode: 'precise' }, /models/],
      [{ ...ok, mode: 'exact' }, /mode/],
      [{ mode: 'precise', models: [{ name: 'm', tokenizerDir: '/x', blockSize: 0 }] }, /blockSize/],
      [{ mode: 'precise', models: [{ name: 'm', tokenizerDir: '/x', extra: 1 }] }, /models\[0\]\.extra/],
      [{ ...ok, kvEvents: { port: 70000 } }, /kvEvents\.port/],
      [{ ...ok, kvEvents: { urls: { a: 'http://x:1' } } }, /kvEvents\.urls\.a/],
      [{ ...ok, kvEvents: { discover: 'yes' } }, /kvEvents\.discover/],
      [{ ...ok, kvEvents: { nope: 1 } }, /kvEvents\.nope/],
    ];
    for (const [p, re] of bad) expect(() => parsePrecisePrefixCacheParams('p', p)).to.throw(re);
    const dflt = parsePrecisePrefixCacheParams('p', {});
    expect(dflt).to.include({ mode: 'auto' });
    expect(dflt.kvDiscover).to.equal(undefined);
    expect(effectiveIndexMode(dflt.mode, dflt.models), 'auto without models: approximate, nothing loads').to.equal('approximate');
    expect(effectiveIndexMode('auto', ok.models)).to.equal('hybrid');
    expect(effectiveIndexMode('precise', ok.models)).to.equal('precise');
    expect(parsePrecisePrefixCacheParams('p', { mode: 'approximate' }).models).to.deep.equal([]);
  });
});
