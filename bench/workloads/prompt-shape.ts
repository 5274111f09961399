/**
 * Helpers shared by the generators: turning a conversation into the body shape of the
 * chosen API, counting reusable prefix tokens structurally, and seeded shuffling.
 */
import type { Rng } from '../../src/util/rng.js';
import { countTokens } from '../../test/kit/synthetic-text.js';
import type { ApiKind, ChatMessage } from './types.js';

/** Role tags for the completions rendering of a conversation (each is one token). */
const ROLE_TAG: Record<ChatMessage['role'], string> = { system: 'sys ', user: 'usr ', assistant: 'ast ', tool: 'tol ' };

export interface PromptShape {
  readonly prompt?: string;
  readonly messages?: readonly ChatMessage[];
  readonly promptTokens: number;
}

/**
 * Chat keeps the messages as they are (the engine's template adds its own tokens).
 * Completions concatenates them; a single system+user pair is plain concatenation so
 * the text equals what inference-perf sends (prefix + question), longer conversations
 * get one-token role tags (`tagged` forces tags, so turn k's text is a prefix of turn k+1's).
 */
export function shapePrompt(api: ApiKind, messages: readonly ChatMessage[], opts: { tagged?: boolean } = {}): PromptShape {
  if (api === 'chat') {
    let tokens = 0;
    for (const m of messages) tokens += countTokens(m.content + toolCallText(m));
    return { messages, promptTokens: tokens };
  }
  const roles = messages.map((m) => m.role).join(',');
  const plain = !opts.tagged && (roles === 'system,user' || roles === 'user');
  const prompt = plain
    ? messages.map((m) => m.content).join('')
    : messages.map((m) => ROLE_TAG[m.role] + m.content + toolCallText(m)).join('');
  return { prompt, promptTokens: countTokens(prompt) };
}

/** Tool calls of a message as completions text (`call <name> <arguments> `), '' for none. */
function toolCallText(m: ChatMessage): string {
  return (m.tool_calls ?? []).map((c) => `call ${c.function.name} ${c.function.arguments} `).join('');
}

/** One piece of a prompt identified by a key: equal keys mean equal text. */
export interface Segment {
  readonly key: string;
  readonly tokens: number;
}

/**
 * Tracks which segment chains were already sent and answers how many leading tokens of a
 * new prompt an infinite cache would hold (the prompt's longest previously seen chain).
 */
export class PrefixChainTracker {
  private readonly seen = new Set<string>();

  observe(segments: readonly Segment[]): number {
    let chain = '';
    let reusable = 0;
    let matching = true;
    for (const s of segments) {
      chain += `\u0000${s.key}`;
      if (matching && this.seen.has(chain)) reusable += s.tokens;
      else matching = false;
      this.seen.add(chain);
    }
    return reusable;
  }
}

/** Fisher–Yates shuffle in place with a seeded Rng. */
export function shuffleInPlace<T>(items: T[], rng: Rng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const tmp = items[i] as T;
    items[i] = items[j] as T;
    items[j] = tmp;
  }
  return items;
}

/** Index drawn from non-negative weights (need not sum to 1). */
export function weightedIndex(weights: readonly number[], rng: Rng): number {
  let total = 0;
  for (const w of weights) total += w;
  let u = rng.next() * total;
  for (let i = 0; i < weights.length; i++) {
    u -= weights[i] ?? 0;
    if (u < 0) return i;
  }
  return weights.length - 1;
}
