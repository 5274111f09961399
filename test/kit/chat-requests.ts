/**
 * Request bodies and response inspection for e2e tests and the demo: OpenAI-style chat
 * requests with deterministic text (test/kit/synthetic-text.ts), the serving engine
 * from `x-engine-id`, and SSE event parsing.
 */
import { syntheticTokens } from './synthetic-text.js';
import type { HttpResult } from './http-client.js';
import type { StreamedRequest } from './sse-request.js';

export const CHAT_PATH = '/v1/chat/completions';

export interface ChatOptions {
  readonly model?: string;
  readonly maxTokens?: number;
  readonly stream?: boolean;
  /** Exact output length (the sim engine honours vLLM's ignore_eos). */
  readonly ignoreEos?: boolean;
}

/** A system prompt of `tokens` tokens determined by `key` (equal keys share the whole prompt). */
export function systemPrompt(key: string, tokens: number): string {
  return syntheticTokens(`system:${key}`, tokens);
}

/**
 * Request `i` of a load loop over `groups` prompt groups: the group's system prompt
 * (`systemTokens` long, keyed `<tag>-<i % groups>`) and a question of its own.
 */
export function groupChat(
  i: number,
  opts: { readonly tag: string; readonly groups: number; readonly systemTokens: number; readonly maxTokens: number },
): StreamedRequest {
  return {
    api: 'chat',
    messages: [
      { role: 'system', content: systemPrompt(`${opts.tag}-${i % opts.groups}`, opts.systemTokens) },
      { role: 'user', content: `question ${i}` },
    ],
    maxTokens: opts.maxTokens,
  };
}

export function chatRequest(system: string, user: string, opts: ChatOptions = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: opts.model ?? 'sim-model',
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: user },
    ],
    max_tokens: opts.maxTokens ?? 4,
  };
  if (opts.stream) body['stream'] = true;
  if (opts.ignoreEos) body['ignore_eos'] = true;
  return body;
}

/** The engine that served a response (`x-engine-id`), or '' when none did. */
export function servedBy(res: HttpResult): string {
  return res.header('x-engine-id') ?? '';
}

/** Occurrences of each value, most frequent first. */
export function tally(values: readonly string[]): Array<[string, number]> {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return [...m.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** The `data:` payloads of an SSE body, in order (`[DONE]` included as a string). */
export function sseEvents(body: string): string[] {
  const out: string[] = [];
  for (const block of body.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart());
    if (data.length > 0) out.push(data.join('\n'));
  }
  return out;
}

/** Runs `fn` over `items` with at most `limit` in flight; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
