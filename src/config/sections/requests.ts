/** `requests:` section: which requests are inference requests and how bodies are read. */
import type { RequestsConfig } from '../types.js';
import { int, listOf, map, num, str, type ObjectReader } from '../field-reader.js';
import {
  DEFAULT_CHARS_PER_TOKEN,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_PREFIX_CHARS,
  DEFAULT_METHODS,
  DEFAULT_PATHS,
} from '../defaults.js';
import { httpPath } from './common-checks.js';

const METHOD = str({ pattern: /^[A-Z]+$/, expected: 'upper-case HTTP method' });
const HEADER_NAME = map(
  str({ pattern: /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, expected: 'HTTP header name (no pseudo-headers)' }),
  (h) => h.toLowerCase(), // Envoy hands header names to ext_proc in lower case
);

export function parseRequests(r: ObjectReader): RequestsConfig {
  const paths = r.get('paths', listOf(httpPath, { minItems: 1, unique: true }), [...DEFAULT_PATHS]);
  const methods = r.get('methods', listOf(METHOD, { minItems: 1, unique: true }), [...DEFAULT_METHODS]);
  const maxBodyBytes = r.get('maxBodyBytes', int({ min: 1024, max: 1024 ** 3 }), DEFAULT_MAX_BODY_BYTES);
  const maxPrefixChars = r.get('maxPrefixChars', int({ min: 0, max: 16 * 1024 * 1024 }), DEFAULT_MAX_PREFIX_CHARS);
  const sessionHeader = r.optional('sessionHeader', HEADER_NAME);
  const charsPerToken = r.get('charsPerToken', num({ minExclusive: 0, max: 64 }), DEFAULT_CHARS_PER_TOKEN);
  r.done();
  const out: { -readonly [K in keyof RequestsConfig]: RequestsConfig[K] } = {
    paths,
    methods,
    maxBodyBytes,
    maxPrefixChars,
    charsPerToken,
  };
  if (sessionHeader !== undefined) out.sessionHeader = sessionHeader;
  return out;
}
