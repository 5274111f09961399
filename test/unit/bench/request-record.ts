/** A benchmark request record with plausible defaults (a successful 1,000-token request), for unit tests of bench statistics. */
import type { RequestRecord } from '../../../bench/harness/driver.js';

export function requestRecord(over: Partial<RequestRecord>): RequestRecord {
  return {
    id: 'r',
    contender: 'c',
    group: 'g',
    scheduledMs: 0,
    lagMs: 0,
    engine: 'e1',
    decision: null,
    status: 200,
    outcome: 'ok',
    ttftMs: 100,
    e2eMs: 500,
    outputTokens: 10,
    promptTokens: 1000,
    cachedTokens: 0,
    expectedPromptTokens: 1000,
    reusableTokens: 900,
    error: null,
    endMs: 500,
    ...over,
  };
}
