/**
 * Token ids of a request when the simulator runs with a real model's tokenizer
 * (`--tokenizer <model dir>`): chat messages rendered with the model's chat template and
 * tokenized exactly as the router's tokenization does (src/tokenization/), completion text
 * tokenized with the tokenizer's special tokens. Without it the simulator keeps its own
 * fixed-chunk tokenizer (tokenizer.ts).
 */
import type { ChatMessageInput, ModelTokenizer } from '../../tokenization/model-tokenizer.js';
import { isRecord, PromptError } from './prompt-template.js';

export function modelPromptTokenIds(tokenizer: ModelTokenizer, rawBody: string): number[] {
  const body: unknown = JSON.parse(rawBody);
  if (!isRecord(body)) throw new PromptError('request body must be a JSON object');
  const messages = body['messages'];
  let ids: number[];
  if (messages !== undefined) {
    if (!Array.isArray(messages) || messages.length === 0) throw new PromptError("'messages' must be a non-empty array");
    const tools = Array.isArray(body['tools']) ? (body['tools'] as unknown[]) : undefined;
    ids = tokenizer.chatTokenIds(messages as ChatMessageInput[], tools);
  } else {
    const p = body['prompt'];
    if (typeof p === 'string') ids = tokenizer.encode(p, true);
    else if (Array.isArray(p) && p.every((x) => typeof x === 'number')) ids = p as number[];
    else throw new PromptError("'prompt' must be a string or token ids");
  }
  return ids.length > 0 ? ids : [0];
}
