/**
 * Prompt text for a request known only by its block-id chain (a recorded or public trace:
 * Mooncake's `hash_ids`): each id becomes the same run of filler words wherever it appears,
 * so two requests whose chains share a prefix share exactly that text prefix, and the
 * router and the engines see the reuse the trace recorded. Words are three letters and a
 * space (4 characters, one engine token), so `blockTokens` words make one block.
 */
import { seededRng } from '../util/rng.js';

const A = 97;

/** `tokens` words determined only by `id`. */
export function blockText(id: number, tokens: number): string {
  const rng = seededRng(Math.imul(id ^ 0x2545f491, 0x9e3779b1));
  const codes = new Array<number>(tokens * 4);
  for (let t = 0; t < tokens; t++) {
    codes[4 * t] = A + rng.int(26);
    codes[4 * t + 1] = A + rng.int(26);
    codes[4 * t + 2] = A + rng.int(26);
    codes[4 * t + 3] = 32;
  }
  let out = '';
  for (let i = 0; i < codes.length; i += 8192) out += String.fromCharCode(...codes.slice(i, i + 8192));
  return out;
}

/**
 * The prompt of a chain: each block's words in order, cut or padded (with words of a
 * request-unique tail id) to `inputTokens`. A cache keeps one string per block id.
 */
export function promptFromBlockIds(
  blockIds: readonly number[],
  blockTokens: number,
  inputTokens: number,
  tailId: number,
  cache: Map<number, string> = new Map(),
): string {
  let out = '';
  let tokens = 0;
  for (const id of blockIds) {
    if (tokens >= inputTokens) break;
    let text = cache.get(id);
    if (text === undefined) {
      text = blockText(id, blockTokens);
      cache.set(id, text);
    }
    const take = Math.min(blockTokens, inputTokens - tokens);
    out += take === blockTokens ? text : text.slice(0, take * 4);
    tokens += take;
  }
  if (tokens < inputTokens) out += blockText(-1 - tailId, inputTokens - tokens);
  return out;
}
