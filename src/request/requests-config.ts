/** `requests:` section: which requests are inference requests and how bodies are read. */
import type { z } from 'zod';
import { int, listOf, num, optionalSection, str } from '../util/schema.js';
import { httpPath } from '../util/schema-checks.js';

/** The two OpenAI-compatible inference endpoints vLLM-like engines serve. */
export const DEFAULT_PATHS: readonly string[] = ['/v1/chat/completions', '/v1/completions'];
/** Inference requests are POSTs; everything else passes through unrouted. */
export const DEFAULT_METHODS: readonly string[] = ['POST'];
/** 16 MiB: fits long-context prompts and a few inline images; bigger bodies get 413. */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;
/** 65,536 chars ≈ 16k tokens: beyond that a longer shared prefix rarely changes the choice. */
export const DEFAULT_MAX_PREFIX_CHARS = 65_536;
/** The common English-text rule of thumb (≈4 characters per token). */
export const DEFAULT_CHARS_PER_TOKEN = 4;

const METHOD = str({ pattern: /^[A-Z]+$/, what: 'upper-case HTTP method' });
export const requestsSchema = optionalSection({
  paths: listOf(httpPath, { minItems: 1, unique: true })
    .default([...DEFAULT_PATHS])
    .describe('Paths treated as inference requests (exact match, query ignored).'),
  methods: listOf(METHOD, { minItems: 1, unique: true })
    .default([...DEFAULT_METHODS])
    .describe('Methods treated as inference requests.'),
  maxBodyBytes: int({ min: 1024, max: 1024 ** 3 })
    .default(DEFAULT_MAX_BODY_BYTES)
    .describe('Bodies above this are answered 413 instead of being parsed.'),
  maxPrefixChars: int({ min: 0, max: 16 * 1024 * 1024 })
    .default(DEFAULT_MAX_PREFIX_CHARS)
    .describe('At most this many prompt characters are used for affinity.'),
  charsPerToken: num({ minExclusive: 0, max: 64 })
    .default(DEFAULT_CHARS_PER_TOKEN)
    .describe('Characters per token for estimates until calibrated.'),
});

export type RequestsConfig = z.output<typeof requestsSchema>;
