/**
 * The precise prefix index: what each engine caches, exactly as its KV events say.
 *
 * Why this shape:
 * - Entries live in a PrefixIndex (the same bitmask table the approximate index uses), keyed
 *   by the router's own token-block keys (token-block-hasher.ts), so a request's keys match
 *   an engine's blocks with one probe per block for all engines at once.
 * - Events name blocks by the engine's hash; the router's key of a stored block needs its
 *   parent's router key, so each engine keeps a ledger engine hash → router key for the
 *   blocks it holds (bounded by the engine's cache size; a ledger that outgrows
 *   `maxBlocksPerEngine` means the feed is broken and the engine is resynced).
 * - A block whose content is not the token ids alone (extra keys: multimodal data, a cache
 *   salt, a LoRA) gets a ledger entry with no router key: no request can match it, and
 *   neither can its descendants. So does a block whose parent the ledger does not know
 *   (the router joined the stream late: see "Late subscriber" below).
 * - Only GPU-tier (or unlabelled) events of KV-cache group 0 (or unlabelled) count: that is
 *   the prefix cache a new request can hit.
 * - Removals leave an endpoint's entries no longer prefix-closed (a parent may go before its
 *   children), which the PrefixIndex detects and answers with its exact walk.
 *
 * Sync state per endpoint: `synced` (every event since the engine's cache was empty has been
 * applied, or the engine said so with sequence 0), `resyncing` (a gap, reconnect or overflow
 * dropped its entries at `resyncAtMs`: the engine may hold blocks the router never heard
 * about) and `unknown` (no event yet). Index modes use the state to fall back to the
 * approximate index (precise-affinity.ts).
 *
 * Late subscriber: a router that subscribes after the engine cached blocks sees a first
 * message with sequence > 0 (a gap: `resyncing`) and BlockStored events extending chains it
 * never saw. It cannot key those (a key covers every ancestor's tokens, which it never saw)
 * and keying them by anything else would let no request match either, so they are ledger
 * entries without a key (`unmatchableBlocks`), as are their descendants: the precise index
 * under-predicts for those prefixes, never predicts a block that is not there. Blocks of
 * chains rooted after the join are keyed normally. The engine leaves `resyncing` when it
 * clears its cache (AllBlocksCleared: it is then complete) or when the caller's resync
 * window ends; an orphan leaves the ledger when the engine evicts it.
 */
import type { BlockHashes } from '../prefix-cache/block-hasher.js';
import { PrefixIndex } from '../prefix-cache/prefix-index.js';
import type { EngineBlockKey, KvEvent } from './kv-event.js';
import { setKey, type TokenBlockHasher } from '../tokenization/token-block-hasher.js';

export type EngineSyncState = 'unknown' | 'synced' | 'resyncing';

export interface EventFedIndexOptions {
  readonly endpoints: number;
  /** A ledger larger than this resyncs the engine (default 1,048,576 blocks). */
  readonly maxBlocksPerEngine?: number;
  /** Called for every router key an engine stored or removed (hybrid mode settles speculation). */
  readonly onKeyChange?: (e: number, key: bigint) => void;
  /** Called when an endpoint's entries were dropped for a resync. */
  readonly onResync?: (e: number) => void;
}

export interface EngineLedgerStats {
  readonly state: EngineSyncState;
  readonly blocks: number;
  readonly unmatchableBlocks: number;
  readonly resyncs: number;
  /** Resyncs because the ledger outgrew its bound. */
  readonly ledgerOverflows: number;
  /** Events of another tier or KV-cache group, not applied. */
  readonly ignoredEvents: number;
  readonly resyncAtMs?: number;
}

interface Ledger {
  /** Engine block hash → router key, or null when no request can match it. */
  readonly keys: Map<EngineBlockKey, bigint | null>;
  state: EngineSyncState;
  resyncAtMs: number;
  resyncs: number;
  ledgerOverflows: number;
  ignored: number;
  unmatchable: number;
}

const DEFAULT_MAX_BLOCKS = 1 << 20;

export class EventFedIndex {
  readonly index: PrefixIndex;
  private readonly ledgers: Ledger[] = [];
  private readonly maxBlocks: number;
  private readonly onKeyChange: ((e: number, key: bigint) => void) | undefined;
  private readonly onResync: ((e: number) => void) | undefined;
  private readonly one: { count: number; lo: Int32Array; hi: Int32Array } = { count: 1, lo: new Int32Array(1), hi: new Int32Array(1) };

  constructor(
    private readonly hasher: TokenBlockHasher,
    opts: EventFedIndexOptions,
  ) {
    this.maxBlocks = opts.maxBlocksPerEngine ?? DEFAULT_MAX_BLOCKS;
    this.onKeyChange = opts.onKeyChange;
    this.onResync = opts.onResync;
    this.index = new PrefixIndex({ endpoints: opts.endpoints, capacityBlocks: this.maxBlocks });
    this.ensureEndpoints(opts.endpoints);
  }

  ensureEndpoints(n: number): void {
    this.index.ensureEndpoints(n);
    while (this.ledgers.length < n)
      this.ledgers.push({ keys: new Map(), state: 'unknown', resyncAtMs: 0, resyncs: 0, ledgerOverflows: 0, ignored: 0, unmatchable: 0 });
  }

  state(e: number): EngineSyncState {
    return this.ledgers[e]?.state ?? 'unknown';
  }

  /** When endpoint `e` last lost its entries (ms on the caller's clock). */
  resyncAtMs(e: number): number {
    return this.ledgers[e]?.resyncAtMs ?? 0;
  }

  /** Matched leading blocks per endpoint (PrefixIndex.match semantics). */
  match(h: BlockHashes): Uint32Array {
    return this.index.match(h);
  }

  /**
   * Applies one batch of engine `e`'s events. Returns false when the ledger overflowed and
   * the engine was resynced instead.
   */
  apply(e: number, model: string, events: readonly KvEvent[], nowMs: number): boolean {
    const led = this.ledger(e);
    for (const ev of events) {
      switch (ev.type) {
        case 'BlockStored': {
          if (!countsForPrefixCache(ev.medium, ev.groupIdx)) {
            led.ignored++;
            break;
          }
          let parent: bigint | null;
          if (ev.parentBlockHash === null) parent = this.hasher.modelSeed(model);
          else parent = led.keys.get(ev.parentBlockHash) ?? null;
          if (ev.hasExtraKeys || ev.loraName !== null) parent = null;
          const bs = ev.blockSize;
          for (let b = 0; b < ev.blockHashes.length; b++) {
            const h = ev.blockHashes[b]!;
            const prev = led.keys.get(h);
            if (prev === null) led.unmatchable--;
            if (parent !== null) {
              parent = this.hasher.blockKey(parent, ev.tokenIds, b * bs, bs);
              led.keys.set(h, parent);
              this.insertOne(e, parent);
            } else {
              led.keys.set(h, null);
              led.unmatchable++;
            }
          }
          if (led.keys.size > this.maxBlocks) {
            led.ledgerOverflows++;
            this.resync(e, nowMs);
            return false;
          }
          break;
        }
        case 'BlockRemoved': {
          if (!countsForPrefixCache(ev.medium, ev.groupIdx)) {
            led.ignored++;
            break;
          }
          for (const h of ev.blockHashes) {
            const k = led.keys.get(h);
            if (k === undefined) continue;
            led.keys.delete(h);
            if (k === null) led.unmatchable--;
            else this.removeOne(e, k);
          }
          break;
        }
        case 'AllBlocksCleared':
          // The engine's cache is empty now: from here the router hears of every block it
          // holds, so a late or resyncing subscriber is complete again.
          this.dropEntries(e);
          led.state = 'synced';
          break;
      }
    }
    return true;
  }

  /** Engine `e`'s cache is known empty (a fresh engine, sequence 0): synced from here on. */
  markFresh(e: number): void {
    this.dropEntries(e);
    this.ledger(e).state = 'synced';
  }

  /** Engine `e`'s feed was interrupted: drop what we knew; it may hold blocks we never heard of. */
  resync(e: number, nowMs: number): void {
    this.dropEntries(e);
    const led = this.ledger(e);
    led.state = 'resyncing';
    led.resyncAtMs = nowMs;
    led.resyncs++;
    this.onResync?.(e);
  }

  /** After a resync window, the endpoint is trusted as precise again. */
  markSynced(e: number): void {
    this.ledger(e).state = 'synced';
  }

  /** Endpoint removed from the pool. */
  forget(e: number): void {
    this.dropEntries(e);
    const led = this.ledger(e);
    led.state = 'unknown';
  }

  stats(e: number): EngineLedgerStats {
    const led = this.ledger(e);
    return {
      state: led.state,
      blocks: led.keys.size,
      unmatchableBlocks: led.unmatchable,
      resyncs: led.resyncs,
      ledgerOverflows: led.ledgerOverflows,
      ignoredEvents: led.ignored,
      ...(led.state === 'resyncing' ? { resyncAtMs: led.resyncAtMs } : {}),
    };
  }

  private dropEntries(e: number): void {
    const led = this.ledger(e);
    led.keys.clear();
    led.unmatchable = 0;
    this.index.evictEndpoint(e);
  }

  private ledger(e: number): Ledger {
    if (e >= this.ledgers.length) this.ensureEndpoints(e + 1);
    return this.ledgers[e]!;
  }

  private insertOne(e: number, k: bigint): void {
    setKey(this.one.lo, this.one.hi, 0, k);
    this.index.insert(e, this.one, 1);
    this.onKeyChange?.(e, k);
  }

  private removeOne(e: number, k: bigint): void {
    setKey(this.one.lo, this.one.hi, 0, k);
    this.index.removeBlocks(e, 0, this.one);
    this.onKeyChange?.(e, k);
  }
}

function countsForPrefixCache(medium: string | null, group: number | null): boolean {
  return (medium === null || medium === 'GPU') && (group === null || group === 0);
}
