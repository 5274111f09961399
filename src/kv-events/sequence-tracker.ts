/**
 * Decides, per received message, whether an engine's event stream is intact.
 *
 * vLLM numbers its messages 0, 1, 2 … per publisher start. So, for a message with sequence s
 * when s' was expected:
 * - s = s': in order, apply;
 * - s = 0 (and s' ≠ 0): the engine restarted (its cache started empty): drop everything we
 *   knew and trust the stream from here (`fresh`);
 * - anything else (a jump forward = lost messages, or backwards = a different publisher): the
 *   router missed events, so what it knows may be stale: `gap`;
 * - the first message after (re)connecting is `fresh` when it is 0 and `gap` otherwise (the
 *   engine may hold blocks announced before we listened).
 * A disconnect (`reset()`) forgets the expectation, so the next message is judged as a first.
 */
export type SequenceVerdict = 'in-order' | 'fresh' | 'gap';

export class SequenceTracker {
  private expected: bigint | undefined;

  observe(seq: bigint): SequenceVerdict {
    const exp = this.expected;
    this.expected = seq + 1n;
    if (seq === 0n) return 'fresh';
    if (exp === undefined) return 'gap';
    return seq === exp ? 'in-order' : 'gap';
  }

  /** The connection dropped: the next message is a first one. */
  reset(): void {
    this.expected = undefined;
  }

  get next(): bigint | undefined {
    return this.expected;
  }
}
