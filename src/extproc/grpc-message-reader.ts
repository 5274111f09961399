/**
 * Splits the DATA of one gRPC request stream into messages (gRPC over HTTP/2 "Length-Prefixed
 * Message": 1 byte compressed flag, 4 bytes big-endian length, then the message).
 *
 * Why a reader of our own: the node:http2 transport (node-http2-ext-proc-server.ts) gets
 * DATA in whatever chunks the socket delivers — one chunk may hold several messages, and a
 * 10 MB BUFFERED body arrives in hundreds of chunks. Chunks of an incomplete message are
 * kept in a list and joined once when the message is whole (joining on every chunk would
 * copy a large body hundreds of times). A message's size is checked from its 5-byte prefix,
 * before any of it is buffered, so an oversized message costs nothing to refuse.
 */

export type MessageReadError =
  | { readonly kind: 'compressed' }
  | { readonly kind: 'too-large'; readonly bytes: number; readonly limit: number };

export interface MessageSink {
  message(payload: Buffer): void;
  error(err: MessageReadError): void;
}

const PREFIX_BYTES = 5;
const EMPTY = Buffer.alloc(0);

export class GrpcMessageReader {
  /** Chunks received but not yet consumed, oldest first (the first one from `offset`). */
  private chunks: Buffer[] = [];
  private offset = 0;
  private buffered = 0;
  /** Length of the message being collected, once its prefix has been read. */
  private need = -1;
  private failed = false;

  constructor(private readonly maxMessageBytes: number) {}

  /** True inside a message (its prefix or payload partly received). */
  get midMessage(): boolean {
    return this.buffered > 0 || this.need >= 0;
  }

  /** Feeds one DATA chunk; calls `sink.message` for every completed message, in order. */
  push(chunk: Buffer, sink: MessageSink): void {
    if (this.failed || chunk.length === 0) return;
    if (this.buffered === 0 && this.need < 0) {
      // Fast path (at a message boundary): messages entirely inside this chunk need no copy.
      let off = 0;
      while (chunk.length - off >= PREFIX_BYTES) {
        const len = this.readPrefix(chunk, off, sink);
        if (len < 0) return;
        if (chunk.length - off - PREFIX_BYTES < len) break;
        sink.message(chunk.subarray(off + PREFIX_BYTES, off + PREFIX_BYTES + len));
        if (this.failed) return;
        off += PREFIX_BYTES + len;
      }
      if (off === chunk.length) return;
      chunk = chunk.subarray(off);
    }
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.drain(sink);
  }

  /** Completes every message the buffered chunks hold. */
  private drain(sink: MessageSink): void {
    for (;;) {
      if (this.need < 0) {
        if (this.buffered < PREFIX_BYTES) return;
        const prefix = this.take(PREFIX_BYTES);
        const len = this.readPrefix(prefix, 0, sink);
        if (len < 0) return;
        this.need = len;
      }
      if (this.buffered < this.need) return;
      const payload = this.take(this.need);
      this.need = -1;
      sink.message(payload);
      if (this.failed) return;
    }
  }

  /** Message length from the prefix at `off`, or -1 after reporting an error. */
  private readPrefix(buf: Buffer, off: number, sink: MessageSink): number {
    const len = buf.readUInt32BE(off + 1);
    if (buf[off] !== 0) return this.fail(sink, { kind: 'compressed' });
    if (len > this.maxMessageBytes) return this.fail(sink, { kind: 'too-large', bytes: len, limit: this.maxMessageBytes });
    return len;
  }

  private fail(sink: MessageSink, err: MessageReadError): number {
    this.failed = true;
    this.chunks = [];
    this.buffered = 0;
    sink.error(err);
    return -1;
  }

  /** Removes the next `n` buffered bytes (n ≤ buffered); a view when one chunk holds them. */
  private take(n: number): Buffer {
    if (n === 0) return EMPTY;
    this.buffered -= n;
    const first = this.chunks[0]!;
    if (first.length - this.offset >= n) {
      const out = first.subarray(this.offset, this.offset + n);
      this.offset += n;
      if (this.offset === first.length) {
        this.chunks.shift();
        this.offset = 0;
      }
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0]!;
      const avail = c.length - this.offset;
      const copy = Math.min(avail, n - filled);
      c.copy(out, filled, this.offset, this.offset + copy);
      filled += copy;
      if (copy === avail) {
        this.chunks.shift();
        this.offset = 0;
      } else this.offset += copy;
    }
    return out;
  }
}
