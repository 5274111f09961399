/**
 * Turns a prompt's chained block keys (prefix-cache/block-hasher.ts: key i names the whole
 * prompt up to block i) into per-trace ids, the way the public Mooncake traces publish
 * theirs: the first key never seen in this trace gets the next unused integer, a key seen
 * before gets its id again. Why: the ids keep exactly what routing needs to replay — which
 * requests share which prefix, block by block — while the file holds no hash of any text,
 * so nothing in it can be matched against a guessed prompt. The keys themselves stay in
 * this process's memory only, and each trace file starts a fresh numbering (`reset`).
 *
 * Memory is bounded: once `maxKeys` keys are remembered, further new keys still get fresh
 * ids but are not remembered, so a later repeat of one looks unique (replay then sees less
 * sharing than there was, never more).
 */
import type { BlockHashes } from '../prefix-cache/block-hasher.js';

export class BlockIdMap {
  private readonly ids = new Map<string, number>();
  private next = 0;

  constructor(private readonly maxKeys: number) {}

  /** The ids of the first `h.count` blocks, in order. */
  idsOf(h: BlockHashes): number[] {
    const out = new Array<number>(h.count);
    for (let i = 0; i < h.count; i++) {
      const key = `${h.hi[i]!.toString(36)}:${h.lo[i]!.toString(36)}`;
      let id = this.ids.get(key);
      if (id === undefined) {
        id = this.next++;
        if (this.ids.size < this.maxKeys) this.ids.set(key, id);
      }
      out[i] = id;
    }
    return out;
  }

  /** Keys remembered now. */
  get size(): number {
    return this.ids.size;
  }

  /** Forgets every key and restarts numbering at 0 (a new trace file). */
  reset(): void {
    this.ids.clear();
    this.next = 0;
  }
}
