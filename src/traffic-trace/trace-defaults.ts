/**
 * Defaults of the `trafficTrace:` config section (src/config/sections/traffic-trace.ts),
 * each with its reason. Recording is off unless a path is given.
 */
export const DEFAULT_TRAFFIC_TRACE = {
  /** Every request: a trace replays the fleet's load as it was; lower it on very busy routers. */
  sampleRate: 1,
  /**
   * 64 tokens per block (256 characters at 4 chars/token): fine enough that a short shared
   * system prompt still shows as shared (the public traces' 512 hides anything under ~2 KB),
   * coarse enough that a 16k-token prefix is 256 ids on its line.
   */
  blockTokens: 64,
  /** About 400,000 requests per file at ~160 bytes a line. */
  maxFileBytes: 64 * 1024 * 1024,
  /** The current file and three older ones: at most 256 MiB on disk by default. */
  maxFiles: 4,
  /** One append a second keeps disk work off the request path; a crash loses at most a second. */
  flushIntervalMs: 1000,
  /** Lines waiting for the disk, at most (a stalled disk drops lines beyond this). */
  maxQueuedBytes: 4 * 1024 * 1024,
  /** Distinct prefix blocks remembered per file (~100 bytes each: ~20 MB). */
  maxBlockKeys: 200_000,
} as const;

/** Sampled requests waiting for their end, at most (each holds its block hashes, ~2 KB at most). */
export const TRACE_MAX_IN_FLIGHT = 10_000;
