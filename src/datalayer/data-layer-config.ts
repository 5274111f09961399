/**
 * `dataLayer:` section: the signals the data layer derives for every plugin — the token-load
 * model's output-length prior and the traffic statistics' window and prefix grouping (the
 * auto handler reads them). Engine scraping has its own section, `engineMetrics:`.
 */
import type { z } from 'zod';
import { int, num, optionalSection } from '../util/schema.js';

/** Expected output length before any response was seen (a typical chat answer). */
export const DEFAULT_OUTPUT_TOKENS_PRIOR = 256;
/** EWMA weight: about the last 10–20 responses matter. */
export const DEFAULT_OUTPUT_TOKENS_ALPHA = 0.1;
/** One minute: long enough to see reuse across a conversation's turns, short enough to adapt. */
export const DEFAULT_TRAFFIC_WINDOW_MS = 60_000;
/** 256 chars ≈ 64 tokens: a system prompt's head identifies its group (the plugins' group key default). */
export const DEFAULT_TRAFFIC_KEY_CHARS = 256;
/** One default prefix block (64 chars): shorter prompts are not grouped. */
export const DEFAULT_TRAFFIC_MIN_KEY_CHARS = 64;

export const dataLayerSchema = optionalSection({
  tokenLoad: optionalSection({
    outputTokensPrior: int({ min: 1, max: 1_000_000 })
      .default(DEFAULT_OUTPUT_TOKENS_PRIOR)
      .describe('Expected output tokens of a model before any response was observed.'),
    outputTokensAlpha: num({ minExclusive: 0, max: 1 })
      .default(DEFAULT_OUTPUT_TOKENS_ALPHA)
      .describe('EWMA weight of a newly observed output length.'),
  }),
  traffic: optionalSection({
    windowMs: int({ min: 1000, max: 3_600_000 }).default(DEFAULT_TRAFFIC_WINDOW_MS).describe('Sliding window of the traffic statistics.'),
    keyChars: int({ min: 1, max: 1 << 20 })
      .default(DEFAULT_TRAFFIC_KEY_CHARS)
      .describe('Leading prompt characters that identify a prefix group.'),
    minKeyChars: int({ min: 1, max: 1 << 20 })
      .default(DEFAULT_TRAFFIC_MIN_KEY_CHARS)
      .describe('Shorter prompts are not grouped.'),
  }),
});

export type DataLayerConfig = z.output<typeof dataLayerSchema>;
