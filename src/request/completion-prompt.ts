/**
 * Encodes a legacy completions body (`prompt`) into the affinity prefix. The prompt text
 * is used as is (escaped only for marker characters). Batches (arrays of prompts) are
 * joined with CLOSE. Token-id prompts become FIELD followed by each id and a space, a form
 * no text prompt can produce; their token count is exact.
 */
import { badField, own, type JsonObject } from './body-fields.js';
import { MARK, type PrefixBuilder } from './prefix-builder.js';
import { RouterError } from '../core/errors.js';

/** Returns the exact token count for token-id prompts, undefined for text prompts. */
export function encodeCompletion(body: JsonObject, out: PrefixBuilder): number | undefined {
  const prompt = own(body, 'prompt');
  if (prompt === undefined) throw new RouterError('BAD_REQUEST', 'prompt: required for completions');
  if (typeof prompt === 'string') {
    out.text(prompt);
    return undefined;
  }
  if (!Array.isArray(prompt)) {
    throw badField('prompt', 'string, array of strings, array of token ids or array of token-id arrays', prompt);
  }
  if (prompt.length === 0) return undefined;
  const first: unknown = prompt[0];
  if (typeof first === 'string') {
    for (let i = 0; i < prompt.length; i++) {
      const p: unknown = prompt[i];
      if (typeof p !== 'string') throw badField(`prompt[${i}]`, 'string (like prompt[0])', p);
      if (i > 0) out.raw(MARK.close);
      out.text(p);
    }
    return undefined;
  }
  if (typeof first === 'number') return encodeTokenIds(prompt, 'prompt', out);
  if (Array.isArray(first)) {
    let tokens = 0;
    for (let i = 0; i < prompt.length; i++) {
      const p: unknown = prompt[i];
      if (!Array.isArray(p)) throw badField(`prompt[${i}]`, 'array of token ids (like prompt[0])', p);
      if (i > 0) out.raw(MARK.close);
      tokens += encodeTokenIds(p, `prompt[${i}]`, out);
    }
    return tokens;
  }
  throw badField('prompt[0]', 'string, token id or array of token ids', first);
}

function encodeTokenIds(ids: readonly unknown[], where: string, out: PrefixBuilder): number {
  out.raw(MARK.field);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
      throw badField(`${where}[${i}]`, 'token id (non-negative integer)', id);
    }
    out.raw(`${id} `);
  }
  return ids.length;
}
