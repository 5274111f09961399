/** `requests:` section: which requests are inference requests and how bodies are read. */
import type { z } from 'zod';
import { int, listOf, num, optionalSection, str } from '../../util/schema.js';
import { DEFAULT_CHARS_PER_TOKEN, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_PREFIX_CHARS, DEFAULT_METHODS, DEFAULT_PATHS } from '../defaults.js';
import type { ConfigSection } from '../config-section.js';
import { httpPath } from './common-checks.js';

const METHOD = str({ pattern: /^[A-Z]+$/, what: 'upper-case HTTP method' });
// Envoy hands header names to ext_proc in lower case.
const HEADER_NAME = str({ pattern: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, what: 'HTTP header name (no pseudo-headers)' }).transform((h) =>
  h.toLowerCase(),
);

const schema = optionalSection({
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
  sessionHeader: HEADER_NAME.optional().describe('Header whose value is a session key for stickiness.'),
  charsPerToken: num({ minExclusive: 0, max: 64 })
    .default(DEFAULT_CHARS_PER_TOKEN)
    .describe('Characters per token for estimates until calibrated.'),
});

export type RequestsConfig = z.output<typeof schema>;

export const requestsSection = { key: 'requests', schema } as const satisfies ConfigSection;
