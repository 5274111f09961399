/**
 * A copy of a string that holds no reference to the string it was cut from.
 *
 * Why: V8 represents `slice`/`substring` results (and regex match strings) of 13 or more
 * characters as views of their parent, so a cache keyed by a piece of a request keeps the
 * whole request text alive: a 500-character piece would hold a 32 KB prompt, memory the
 * caches' character bounds do not see, and the retained texts survive young-generation
 * collections (copied, then promoted), which is most of the garbage collector's work on the
 * decision path. Cache keys are copied once, when they are stored. The copy is one-byte
 * whenever its text allows, even when cut from a two-byte parent (a render skeleton holds
 * placeholder characters): text built from it then stays one-byte too.
 */
export function ownString(s: string): string {
  if (s.length === 0) return s;
  // Latin-1 keeps a one-byte string one-byte (V8 compares strings of different widths code
  // unit by code unit, far slower than memcmp); UTF-16LE round-trips every other code unit,
  // lone surrogates included.
  return WIDE.test(s) ? Buffer.from(s, 'utf16le').toString('utf16le') : Buffer.from(s, 'latin1').toString('latin1');
}

const WIDE = /[^\u0000-\u00ff]/;
