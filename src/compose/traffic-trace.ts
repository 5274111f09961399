/**
 * Builds the opt-in traffic trace recorder (src/traffic-trace/) from the config, not yet
 * attached (the app attaches it to its scheduler at start); undefined when
 * `trafficTrace.path` is not set.
 */
import type { RouterConfig } from '../config/types.js';
import type { Logger } from '../logging/logger.js';
import { TraceFile } from '../traffic-trace/trace-file.js';
import { TraceRecorder } from '../traffic-trace/trace-recorder.js';
import { TRACE_MAX_IN_FLIGHT } from '../traffic-trace/trace-defaults.js';
import { seededRng } from '../util/rng.js';

/** Salt of the sampling RNG's seed: sampling must not consume the scheduler's random numbers. */
const SAMPLING_SEED_SALT = 0x7ace;

export function createTrafficTrace(config: RouterConfig, deps: { logger: Logger }): TraceRecorder | undefined {
  const t = config.trafficTrace;
  if (t.path === undefined) return undefined;
  const log = deps.logger.child({ component: 'traffic-trace' });
  let warned = false;
  const recorder = new TraceRecorder({
    sink: new TraceFile({
      path: t.path,
      maxFileBytes: t.maxFileBytes,
      maxFiles: t.maxFiles,
      flushIntervalMs: t.flushIntervalMs,
      maxQueuedBytes: t.maxQueuedBytes,
      onError: (err) => {
        if (warned) return;
        warned = true;
        log.warn('traffic trace: writing failed; lines are being lost (logged once)', {
          error: err instanceof Error ? err.message : String(err),
        });
      },
    }),
    sampleRate: t.sampleRate,
    blockTokens: t.blockTokens,
    charsPerToken: config.requests.charsPerToken,
    maxPrefixChars: config.requests.maxPrefixChars,
    maxBlockKeys: t.maxBlockKeys,
    maxInFlight: TRACE_MAX_IN_FLIGHT,
    rng: seededRng((config.seed ^ SAMPLING_SEED_SALT) >>> 0),
  });
  log.info('recording a traffic trace', { path: t.path, sample_rate: t.sampleRate, block_tokens: t.blockTokens });
  return recorder;
}
