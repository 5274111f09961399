/**
 * The shared store of vLLM's ExampleConnector, for simulated engines in separate processes:
 * one empty file per computed block in a shared directory, named by its chained block hash
 * (the hash names the whole prefix up to that block, so a file's presence means the block's
 * KV is in the store). Engines started with the same `--kv-store-dir` see each other's
 * blocks. Synchronous file calls: a simulator's store, a few dozen files per request.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SharedKvStore } from '../../src/simulate/engine/kv-transfer.js';

export class DirectoryKvStore implements SharedKvStore {
  /** Blocks this process wrote or saw (saves a stat per block). */
  private readonly known = new Set<number>();

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  matchPrefix(hashes: readonly number[]): number {
    let n = 0;
    while (n < hashes.length && this.has(hashes[n]!)) n++;
    return n;
  }

  put(hashes: readonly number[]): void {
    for (const h of hashes) {
      if (this.known.has(h)) continue;
      writeFileSync(this.file(h), '');
      this.known.add(h);
    }
  }

  private has(h: number): boolean {
    if (this.known.has(h)) return true;
    if (!existsSync(this.file(h))) return false;
    this.known.add(h);
    return true;
  }

  private file(h: number): string {
    return join(this.dir, `${h.toString(16)}.kv`);
  }
}
