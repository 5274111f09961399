/**
 * Bounded, append-only builder for the affinity prefix.
 *
 * Why: bodies can be many megabytes, yet routing only needs the first `maxChars` of the
 * prompt (for block hashing) and the length of the whole prompt (for the token estimate).
 * Parts are collected in an array and joined once at the end (no quadratic string
 * concatenation); once the bound is reached, further parts are only counted, never copied,
 * and expensive parts (hashes of images) are not even computed.
 *
 * Encoding: structure is written with control characters U+0001..U+0003 and user text is
 * escaped so it can never contain them raw. That keeps the encoding injective (two
 * different conversations never produce the same string), which the prefix-cache index
 * relies on, while ordinary text passes through unchanged.
 */

/** Structural marker characters; user text never contains them unescaped. */
export const MARK = {
  /** Starts a record (a tool or a message). */
  open: '\u0001',
  /** Separates the fields of a record. */
  field: '\u0002',
  /** Ends a record; also separates the prompts of a batch. */
  close: '\u0003',
  /** Escape character: followed by A-D for an escaped U+0001-U+0004, or `[` for a placeholder. */
  escape: '\u0004',
} as const;

const NEEDS_ESCAPE = /[\u0001-\u0004]/;
const NEEDS_ESCAPE_ALL = /[\u0001-\u0004]/g;

/** Escapes the marker characters in user text (U+0001 → U+0004 'A', ... U+0004 → U+0004 'D'). */
export function escapeText(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return s;
  return s.replace(NEEDS_ESCAPE_ALL, (c) => MARK.escape + String.fromCharCode(0x40 + c.charCodeAt(0)));
}

function countEscapes(s: string): number {
  let n = 0;
  NEEDS_ESCAPE_ALL.lastIndex = 0;
  while (NEEDS_ESCAPE_ALL.exec(s) !== null) n++;
  NEEDS_ESCAPE_ALL.lastIndex = 0;
  return n;
}

export class PrefixBuilder {
  private readonly parts: string[] = [];
  private built = 0;
  private total = 0;

  constructor(private readonly maxChars: number) {}

  /** True once the prefix holds `maxChars` characters; later parts are only counted. */
  get full(): boolean {
    return this.built >= this.maxChars;
  }

  /** Length of everything appended so far (the whole encoded prompt), in UTF-16 code units. */
  get chars(): number {
    return this.total;
  }

  /** Appends structural text verbatim (markers, fixed labels, numbers). */
  raw(s: string): void {
    this.total += s.length;
    this.take(s);
  }

  /** Appends user-supplied text, escaping marker characters. */
  text(s: string): void {
    if (!NEEDS_ESCAPE.test(s)) {
      this.raw(s);
      return;
    }
    const room = this.maxChars - this.built;
    // Escaping only lengthens text, so the first `room` escaped characters come from at
    // most the first `room` raw ones: escape a slice, never the whole (maybe huge) string.
    if (room > 0) this.take(escapeText(s.length > room ? s.slice(0, room) : s));
    this.total += s.length + countEscapes(s);
  }

  /**
   * Appends a part of known length whose content is costly to compute (a hash); `make`
   * runs only when at least part of the result is kept in the prefix.
   */
  lazy(length: number, make: () => string): void {
    this.total += length;
    if (!this.full) this.take(make());
  }

  /** The bounded prefix. Never ends in half of a surrogate pair cut by the bound. */
  build(): string {
    let s = this.parts.join('');
    if (this.total > s.length && s.length > 0) {
      const last = s.charCodeAt(s.length - 1);
      if (last >= 0xd800 && last <= 0xdbff) s = s.slice(0, -1);
    }
    return s;
  }

  private take(s: string): void {
    const room = this.maxChars - this.built;
    if (room <= 0 || s.length === 0) return;
    if (s.length <= room) {
      this.parts.push(s);
      this.built += s.length;
    } else {
      this.parts.push(s.slice(0, room));
      this.built = this.maxChars;
    }
  }
}
