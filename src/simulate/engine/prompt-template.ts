/**
 * Turns an OpenAI request body into the prompt the simulated engine "sees". The chat
 * template is deliberately simple and documented (docs/sim-engine.md) so the router's
 * prefix extractor can lay text out the same way: tools JSON first (one line), then each
 * message as `<|role|>\ncontent\n`. Content-part arrays contribute their text parts,
 * concatenated. No generation prompt is appended, so turn N's prompt is a strict text
 * prefix of turn N+1's. Completions prompts are used as is: a string, an array of
 * strings (joined with no separator), or token ids (used directly, no tokenizer).
 */
import { tokenize } from './tokenizer.js';

export interface ChatMessage {
  readonly role: string;
  readonly content?: unknown;
  readonly tool_calls?: unknown;
}

/** A prompt is either text (to be tokenized) or explicit token ids. */
export type RenderedPrompt = { readonly kind: 'text'; readonly text: string } | { readonly kind: 'ids'; readonly ids: number[] };

/** Thrown for malformed prompts; the HTTP layer turns it into a 400. */
export class PromptError extends Error {
  override readonly name = 'PromptError';
}

/** Text of a message `content`: a string, or the concatenated text parts of an array. */
export function contentText(content: unknown): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    let out = '';
    for (const part of content) {
      if (typeof part === 'string') out += part;
      else if (isRecord(part) && part['type'] === 'text' && typeof part['text'] === 'string') out += part['text'];
    }
    return out;
  }
  throw new PromptError('message content must be a string or an array of content parts');
}

/** Renders chat messages (and optional tools) with the simulator's chat template. */
export function renderChat(messages: readonly ChatMessage[], tools?: unknown): string {
  let out = '';
  if (Array.isArray(tools) && tools.length > 0) out += JSON.stringify(tools) + '\n';
  for (const m of messages) {
    out += `<|${m.role}|>\n${contentText(m.content)}`;
    if (m.tool_calls !== undefined && m.tool_calls !== null) out += JSON.stringify(m.tool_calls);
    out += '\n';
  }
  return out;
}

/** Validates and renders the `messages` (+ `tools`) of a chat completions body. */
export function chatPrompt(body: Readonly<Record<string, unknown>>): RenderedPrompt {
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) throw new PromptError("'messages' must be a non-empty array");
  const checked: ChatMessage[] = messages.map((m, i) => {
    if (!isRecord(m) || typeof m['role'] !== 'string') throw new PromptError(`messages[${i}] needs a string 'role'`);
    return { role: m['role'], content: m['content'], tool_calls: m['tool_calls'] };
  });
  return { kind: 'text', text: renderChat(checked, body['tools']) };
}

/** Validates the `prompt` of a completions body. */
export function completionPrompt(body: Readonly<Record<string, unknown>>): RenderedPrompt {
  const p = body['prompt'];
  if (typeof p === 'string') return { kind: 'text', text: p };
  if (Array.isArray(p)) {
    if (p.length === 0) return { kind: 'text', text: '' };
    if (p.every((x) => typeof x === 'string')) return { kind: 'text', text: (p as string[]).join('') };
    if (p.every(isTokenId)) return { kind: 'ids', ids: p as number[] };
    if (p.every((x) => Array.isArray(x) && x.every(isTokenId))) return { kind: 'ids', ids: (p as number[][]).flat() };
  }
  throw new PromptError("'prompt' must be a string, an array of strings, or token ids");
}

/** Token ids of a rendered prompt; never empty (an empty prompt becomes one token 0). */
export function promptTokenIds(prompt: RenderedPrompt, charsPerToken: number): number[] {
  const ids = prompt.kind === 'ids' ? prompt.ids : tokenize(prompt.text, charsPerToken);
  return ids.length > 0 ? ids : [0];
}

function isTokenId(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && x >= 0;
}

export function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
