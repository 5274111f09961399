/**
 * A growable buffer of token ids (uint32), reused across requests: a rendered 32 KB prompt
 * is tens of thousands of ids, and copying cached runs of them with `set` (a memcpy) instead
 * of pushing them one by one into a fresh array keeps tokenization cost and garbage down.
 */
export class IdBuffer {
  private buf = new Uint32Array(4096);
  length = 0;

  push(id: number): void {
    if (this.length === this.buf.length) this.grow(this.length + 1);
    this.buf[this.length++] = id;
  }

  pushAll(ids: Uint32Array | readonly number[]): void {
    const n = ids.length;
    if (this.length + n > this.buf.length) this.grow(this.length + n);
    if (ids instanceof Uint32Array) this.buf.set(ids, this.length);
    else for (let i = 0; i < n; i++) this.buf[this.length + i] = ids[i]!;
    this.length += n;
  }

  /** A view of the ids so far; valid until the buffer is next written. */
  view(): Uint32Array {
    return this.buf.subarray(0, this.length);
  }

  /** A copy of the ids from `start` on. */
  copy(start = 0): Uint32Array {
    return this.buf.slice(start, this.length);
  }

  private grow(need: number): void {
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint32Array(cap);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }
}
