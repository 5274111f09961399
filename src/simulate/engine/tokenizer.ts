/**
 * The simulator's offline tokenizer. Real BPE is not available (no hub, no vocab files)
 * and not needed: what matters for cache routing is that tokenization is deterministic
 * and prefix-stable, so two prompts sharing a text prefix share their leading tokens,
 * and that counts are realistic (~4 characters per token for English). We cut the text
 * into fixed chunks of `charsPerToken` UTF-16 code units; a chunk's token id is a hash of
 * its characters. A shared prefix of L characters therefore yields floor(L / cpt)
 * identical leading tokens.
 */

/** Ids are kept below 2^31 so they look like ordinary vocabulary indices. */
const ID_MASK = 0x7fffffff;

/** FNV-1a over UTF-16 code units, 32 bits. */
export function fnv1a32(s: string, start = 0, end = s.length): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Token ids of `text`: one per `charsPerToken`-character chunk (the last may be shorter). */
export function tokenize(text: string, charsPerToken: number): number[] {
  const cpt = Math.max(1, Math.floor(charsPerToken));
  const out: number[] = new Array<number>(Math.ceil(text.length / cpt));
  for (let i = 0, k = 0; i < text.length; i += cpt, k++) {
    out[k] = fnv1a32(text, i, Math.min(text.length, i + cpt)) & ID_MASK;
  }
  return out;
}

/** Number of tokens `tokenize` would return, without building the array. */
export function countTokens(text: string, charsPerToken: number): number {
  return Math.ceil(text.length / Math.max(1, Math.floor(charsPerToken)));
}
