/**
 * Local index changes waiting to be published, as encoded batches.
 *
 * Changes are packed as they happen (the keys are copied out of the hasher's reused
 * buffer at once) into the open batch; the open batch is sealed when it reaches
 * `maxBatchChanges` or 256 KiB, or when the publisher takes it. Sealed batches queue while NATS is
 * away, bounded by `maxOutboxBytes`: beyond it the oldest batches are dropped (and
 * counted), so a long outage costs bounded memory and the newest routing facts survive.
 */
import type { IndexDelta } from '../plugins/multi/prefix-index-replica.js';
import { encodeIndexBatch, packChange, WIRE_LIMITS, type PackedChange } from './wire-codec.js';

export interface OutboxStats {
  /** Changes accepted from the index. */
  readonly changes: number;
  /** Changes dropped because the outbox was full. */
  readonly droppedChanges: number;
  /** Sealed batches waiting and their bytes. */
  readonly queuedBatches: number;
  readonly queuedBytes: number;
}

interface Sealed {
  readonly bytes: Uint8Array;
  readonly changes: number;
}

export class IndexOutbox {
  private open: PackedChange[] = [];
  private openBytes = 0;
  private readonly sealed: Sealed[] = [];
  private sealedBytes = 0;
  private accepted = 0;
  private dropped = 0;

  constructor(
    private readonly replicaId: string,
    private readonly blockChars: number,
    private readonly maxBatchChanges: number,
    private readonly maxOutboxBytes: number,
  ) {}

  add(delta: IndexDelta): void {
    const c = packChange(delta);
    this.open.push(c);
    this.openBytes += c.keys.length + c.endpointId.length + 8;
    this.accepted++;
    if (this.open.length >= this.maxBatchChanges || this.openBytes >= Math.min(WIRE_LIMITS.batchBytes, this.maxOutboxBytes / 4))
      this.seal();
  }

  /** The oldest batch to publish (sealing the open one if nothing is sealed), without removing it. */
  peek(): Sealed | undefined {
    if (this.sealed.length === 0) this.seal();
    return this.sealed[0];
  }

  /** The batch `peek` returned was published (or, `rejected`, refused for good: counted as dropped). */
  shift(rejected = false): void {
    const b = this.sealed.shift();
    if (b === undefined) return;
    this.sealedBytes -= b.bytes.length;
    if (rejected) this.dropped += b.changes;
  }

  get pending(): number {
    return this.sealed.length + (this.open.length > 0 ? 1 : 0);
  }

  stats(): OutboxStats {
    return { changes: this.accepted, droppedChanges: this.dropped, queuedBatches: this.sealed.length, queuedBytes: this.sealedBytes };
  }

  private seal(): void {
    if (this.open.length === 0) return;
    const bytes = encodeIndexBatch(this.replicaId, this.blockChars, this.open);
    this.sealed.push({ bytes, changes: this.open.length });
    this.sealedBytes += bytes.length;
    this.open = [];
    this.openBytes = 0;
    while (this.sealedBytes > this.maxOutboxBytes && this.sealed.length > 1) {
      const old = this.sealed.shift()!;
      this.sealedBytes -= old.bytes.length;
      this.dropped += old.changes;
    }
  }
}
