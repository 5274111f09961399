/**
 * Parameter fields several plugins share (load unit, engine-figure age, prefix blocks), so
 * each plugin's schema spells them the same way with the same defaults and docs.
 */
import { LOAD_UNITS, type LoadMeasure, type LoadUnit } from '../../endpoints/load.js';
import { BlockHasher } from '../../prefix-cache/block-hasher.js';
import { serviceKey, type PluginHandle } from '../../framework/plugin-api.js';
import { int, num, oneOf } from '../../util/schema.js';

/** Requests: exact router accounting, no model needed; tokens is opt-in. */
export const DEFAULT_LOAD_UNIT: LoadUnit = 'requests';
/** ≈ a 768-token prompt with a 256-token answer: thresholds in requests map to this many tokens each. */
export const DEFAULT_TOKENS_PER_REQUEST = 1024;

/** `unit` and `tokensPerRequest`: what load means for this plugin. */
export const loadUnitParams = {
  unit: oneOf(LOAD_UNITS)
    .default(DEFAULT_LOAD_UNIT)
    .describe('Load unit: requests (in flight, raised to the engine queue when fresh) or tokens (pending tokens ÷ tokensPerRequest).'),
  tokensPerRequest: num({ minExclusive: 0, max: 10_000_000 })
    .default(DEFAULT_TOKENS_PER_REQUEST)
    .describe('In the tokens unit, this many pending tokens count as one request (thresholds stay in requests).'),
};

/** `staleAfterMs`: engine figures older than this are ignored. */
export const staleAfterParam = {
  staleAfterMs: int({ min: 0, max: 3_600_000 })
    .optional()
    .describe("Engine-reported figures older than this are ignored; default: the data layer's engineMetrics.staleAfterMs."),
};

export function staleAfter(p: { readonly staleAfterMs?: number | undefined }, handle: PluginHandle): number {
  return p.staleAfterMs ?? handle.signals.maxMetricsAgeMs;
}

/** `unit`, `tokensPerRequest` and `staleAfterMs`: the parameters of every load-aware plugin. */
export const loadAwareParams = { ...loadUnitParams, ...staleAfterParam };

/** The parsed parameters with their load measure (unit, tokens per request, engine-figure age) resolved. */
export function withLoadMeasure<
  P extends { readonly unit: LoadUnit; readonly tokensPerRequest: number; readonly staleAfterMs?: number | undefined },
>(p: P, handle: PluginHandle): P & LoadMeasure {
  return { ...p, ...loadMeasure(p, handle) };
}

export function loadMeasure(
  p: { readonly unit: LoadUnit; readonly tokensPerRequest: number; readonly staleAfterMs?: number | undefined },
  handle: PluginHandle,
): LoadMeasure {
  return { unit: p.unit, tokensPerRequest: p.tokensPerRequest, maxMetricsAgeMs: staleAfter(p, handle) };
}

/** 64 chars ≈ 16 tokens at 4 chars/token = vLLM's default KV block size (GIE uses 64 too). */
export const DEFAULT_BLOCK_CHARS = 64;
/** 65,536 prompt chars / 64: every block of the default bounded prefix can be matched. */
export const DEFAULT_MAX_PREFIX_BLOCKS = 1024;

/** `blockChars` and `maxPrefixBlocks`: how the prompt is cut into chained block hashes. */
export const blockParams = {
  blockChars: int({ min: 1, max: 65_536 })
    .default(DEFAULT_BLOCK_CHARS)
    .describe('Prefix block size in characters (≈ engine block size × chars per token).'),
  maxPrefixBlocks: int({ min: 1, max: 1 << 20 })
    .default(DEFAULT_MAX_PREFIX_BLOCKS)
    .describe('At most this many leading blocks are hashed and matched.'),
};

/** One block hasher per block geometry, shared by every plugin of the scheduler that uses it. */
export function sharedBlockHasher(handle: PluginHandle, p: { readonly blockChars: number; readonly maxPrefixBlocks: number }): BlockHasher {
  const key = serviceKey<BlockHasher>(`block-hasher/${p.blockChars}/${p.maxPrefixBlocks}`);
  return handle.shared(key, () => new BlockHasher({ blockChars: p.blockChars, maxBlocks: p.maxPrefixBlocks }));
}

/** 256 chars ≈ 64 tokens: a system prompt's head identifies its group. */
export const DEFAULT_GROUP_KEY_CHARS = 256;

/** `keyChars` / `minKeyChars`: which leading characters identify a prefix group. */
export const groupKeyParams = {
  keyChars: int({ min: 1, max: 1 << 20 })
    .default(DEFAULT_GROUP_KEY_CHARS)
    .describe('Leading prompt characters that identify a prefix group.'),
  minKeyChars: int({ min: 1, max: 1 << 20 })
    .default(DEFAULT_BLOCK_CHARS)
    .describe('Shorter prefixes are not grouped (one block by default).'),
};
