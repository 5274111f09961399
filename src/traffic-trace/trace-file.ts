/**
 * The trace's file on disk: lines are queued in memory and appended in batches off the
 * request path (every `flushIntervalMs`, or sooner once 64 KiB are queued), so recording
 * never blocks a routing decision on the disk. Bounded in every direction:
 *
 * - the queue holds at most `maxQueuedBytes`; lines beyond are dropped and counted (a slow
 *   or full disk loses trace lines, never memory or latency);
 * - a file grows to about `maxFileBytes` (it may pass it by one line), then rotates:
 *   `path` → `path.1` → … → `path.<maxFiles-1>`, the oldest deleted, so at most `maxFiles`
 *   files exist. Each file is a trace of its own (the caller restarts its id numbering when
 *   `append` reports a rotation);
 * - a file left by an earlier run is rotated away before the first write, so a trace never
 *   mixes two numberings.
 *
 * A failed write is counted and reported through `onError`; its lines are lost.
 */
import { existsSync, statSync } from 'node:fs';
import { appendFile, rename, rm } from 'node:fs/promises';

export interface TraceFileOptions {
  readonly path: string;
  readonly maxFileBytes: number;
  /** Files kept, the current one included (≥ 1). */
  readonly maxFiles: number;
  readonly flushIntervalMs: number;
  readonly maxQueuedBytes: number;
  /** A failed write or rotation (called at most once per flush). */
  readonly onError?: (err: unknown) => void;
}

export interface TraceFileStats {
  readonly written: number;
  readonly dropped: number;
  readonly rotations: number;
  readonly writeErrors: number;
  readonly queuedBytes: number;
}

/** What `append` did with a line. */
export type AppendResult = 'queued' | 'rotated' | 'dropped';

const ROTATE = Symbol('rotate');
const FLUSH_SOON_BYTES = 64 * 1024;

export class TraceFile {
  private queue: (string | typeof ROTATE)[] = [];
  private queuedBytes = 0;
  /** Bytes already in, or queued for, the current file. */
  private fileBytes = 0;
  private written = 0;
  private dropped = 0;
  private rotations = 0;
  private writeErrors = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private flushQueued = false;

  constructor(private readonly o: TraceFileOptions) {
    if (!(o.maxFileBytes >= 1) || !(o.maxFiles >= 1) || !(o.flushIntervalMs >= 1) || !(o.maxQueuedBytes >= 1)) {
      throw new RangeError('trace file bounds must be positive');
    }
    if (existsSync(o.path) && statSync(o.path).size > 0) this.queue.push(ROTATE);
  }

  /**
   * Queues one line (ending in a newline). 'rotated': the line closed its file; the next
   * line starts a new trace. 'dropped': the queue was full.
   */
  append(line: string): AppendResult {
    const bytes = Buffer.byteLength(line);
    if (this.queuedBytes + bytes > this.o.maxQueuedBytes) {
      this.dropped++;
      return 'dropped';
    }
    this.queue.push(line);
    this.queuedBytes += bytes;
    this.fileBytes += bytes;
    let result: AppendResult = 'queued';
    if (this.fileBytes >= this.o.maxFileBytes) {
      this.queue.push(ROTATE);
      this.fileBytes = 0;
      result = 'rotated';
    }
    if (this.queuedBytes >= FLUSH_SOON_BYTES) void this.flush();
    return result;
  }

  stats(): TraceFileStats {
    return {
      written: this.written,
      dropped: this.dropped,
      rotations: this.rotations,
      writeErrors: this.writeErrors,
      queuedBytes: this.queuedBytes,
    };
  }

  /** Arms the periodic flush. Idempotent. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.flush(), this.o.flushIntervalMs);
    this.timer.unref();
  }

  /** Writes everything queued now (one flush at a time; a call during one waits for the next). */
  flush(): Promise<void> {
    if (this.flushQueued) return this.flushing;
    this.flushQueued = true;
    this.flushing = this.flushing.then(async () => {
      this.flushQueued = false;
      await this.drain();
    });
    return this.flushing;
  }

  /** Stops the timer and writes what is queued. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async drain(): Promise<void> {
    const items = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    let chunk: string[] = [];
    try {
      for (const item of items) {
        if (item !== ROTATE) {
          chunk.push(item);
          continue;
        }
        await this.write(chunk);
        chunk = [];
        await this.rotate();
      }
      await this.write(chunk);
    } catch (err) {
      this.writeErrors++;
      this.o.onError?.(err);
    }
  }

  private async write(lines: string[]): Promise<void> {
    if (lines.length === 0) return;
    await appendFile(this.o.path, lines.join(''), { mode: 0o600 });
    this.written += lines.length;
  }

  private async rotate(): Promise<void> {
    const { path, maxFiles } = this.o;
    const name = (k: number): string => (k === 0 ? path : `${path}.${k}`);
    await rm(name(maxFiles - 1), { force: true });
    for (let k = maxFiles - 2; k >= 0; k--) {
      if (existsSync(name(k))) await rename(name(k), name(k + 1));
    }
    this.rotations++;
  }
}
