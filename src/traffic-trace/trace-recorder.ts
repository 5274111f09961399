/**
 * Records the router's traffic as a privacy-safe trace (trace-format.ts), so a user can
 * replay their own workload through the fleet simulator (`cacheroute simulate --trace`) and
 * choose a strategy and fleet size from measurements instead of guesses.
 *
 * It listens to the scheduler's decision events, like telemetry, and never touches the
 * request: at `routed` a sampled request's prompt prefix is cut into blocks of
 * `blockTokens × charsPerToken` characters and hashed with the router's chained block hash
 * (in memory only); at `finished` the line is written with the per-trace ids of those
 * hashes (block-ids.ts), the token counts (the engine's `usage` when the edge saw it, else
 * the router's estimate) and the output length (output-length.ts). Why at `finished`: only
 * then is the output known. What is written: arrival, model, counts, ids. Never text, never
 * a hash of text, never a request id, tenant, session or client address.
 *
 * Bounded: at most `maxInFlight` sampled requests wait for their end (beyond that, requests
 * are not sampled); the id map and the file are bounded by their own limits.
 */
import type { RequestOutcome, RouteRequest } from '../core/types.js';
import type { DecisionEvent, DecisionListener } from '../scheduling/decision-events.js';
import { BlockHasher, copyBlockHashes, type BlockHashes } from '../prefix-cache/block-hasher.js';
import type { Rng } from '../util/rng.js';
import { BlockIdMap } from './block-ids.js';
import { outputLength } from './output-length.js';
import { formatTraceLine } from './trace-format.js';
import type { AppendResult, TraceFileStats } from './trace-file.js';

/** Where lines go (trace-file.ts; tests pass a collector). */
export interface TraceSink {
  append(line: string): AppendResult;
  start(): void;
  stop(): Promise<void>;
  stats(): TraceFileStats;
}

export interface TraceRecorderOptions {
  readonly sink: TraceSink;
  /** Fraction of requests recorded, in [0, 1]. */
  readonly sampleRate: number;
  /** Tokens per trace block. */
  readonly blockTokens: number;
  /** The router's chars-per-token estimate (requests.charsPerToken): block size in characters. */
  readonly charsPerToken: number;
  /** The longest prefix the extractor keeps (requests.maxPrefixChars): bounds the blocks hashed. */
  readonly maxPrefixChars: number;
  /** Distinct block keys remembered per trace file. */
  readonly maxBlockKeys: number;
  /** Sampled requests waiting for their end, at most. */
  readonly maxInFlight: number;
  readonly rng: Rng;
}

export interface TraceRecorderStats extends TraceFileStats {
  readonly sampled: number;
  readonly recorded: number;
  /** Requests not sampled because `maxInFlight` sampled ones were waiting. */
  readonly skippedBusy: number;
  readonly inFlight: number;
}

interface Sampled {
  readonly atMs: number;
  readonly hashes: BlockHashes;
}

/** Where the scheduler's decision events come from (src/scheduling/scheduler.ts). */
export interface DecisionSource {
  onDecision(listener: DecisionListener): () => void;
}

export class TraceRecorder {
  private readonly hasher: BlockHasher;
  private readonly ids: BlockIdMap;
  private readonly blockChars: number;
  private readonly inFlight = new Map<RouteRequest, Sampled>();
  /** Router-clock ms the current file's timestamps count from (its first sampled arrival). */
  private originMs: number | undefined;
  private sampled = 0;
  private recorded = 0;
  private skippedBusy = 0;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly o: TraceRecorderOptions) {
    if (!(o.sampleRate >= 0 && o.sampleRate <= 1)) throw new RangeError(`sampleRate must be in [0, 1], got ${o.sampleRate}`);
    this.blockChars = Math.max(1, Math.round(o.blockTokens * o.charsPerToken));
    this.hasher = new BlockHasher({ blockChars: this.blockChars, maxBlocks: Math.floor(o.maxPrefixChars / this.blockChars) });
    this.ids = new BlockIdMap(o.maxBlockKeys);
  }

  /** Starts listening to `source` and flushing the sink. */
  attach(source: DecisionSource): void {
    if (this.unsubscribe !== undefined) return;
    this.o.sink.start();
    this.unsubscribe = source.onDecision(this.listener);
  }

  /** Stops listening and writes what is queued (requests still in flight are not recorded). */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.inFlight.clear();
    await this.o.sink.stop();
  }

  stats(): TraceRecorderStats {
    return {
      ...this.o.sink.stats(),
      sampled: this.sampled,
      recorded: this.recorded,
      skippedBusy: this.skippedBusy,
      inFlight: this.inFlight.size,
    };
  }

  /** The decision listener (exported through the class for tests). */
  readonly listener: DecisionListener = (event: DecisionEvent): void => {
    if (event.kind === 'routed') this.onRouted(event.request);
    else if (event.kind === 'finished') this.onFinished(event.request, event.outcome);
  };

  private onRouted(request: RouteRequest): void {
    if (this.o.sampleRate < 1 && this.o.rng.next() >= this.o.sampleRate) return;
    if (this.inFlight.size >= this.o.maxInFlight) {
      this.skippedBusy++;
      return;
    }
    this.sampled++;
    this.originMs ??= request.arrivalMs;
    this.inFlight.set(request, { atMs: request.arrivalMs, hashes: copyBlockHashes(this.hasher.hash(request.model, request.prefix)) });
  }

  private onFinished(request: RouteRequest, outcome: RequestOutcome): void {
    const s = this.inFlight.get(request);
    if (s === undefined) return;
    this.inFlight.delete(request);
    const out = outputLength({
      ...(outcome.completionTokens !== undefined ? { completionTokens: outcome.completionTokens } : {}),
      ...(outcome.responseBytes !== undefined ? { responseBytes: outcome.responseBytes } : {}),
      stream: request.stream,
      chat: request.promptInput?.kind !== 'completion',
      model: request.model,
      ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
      charsPerToken: this.o.charsPerToken,
    });
    const inputTokens = Math.max(1, Math.round(outcome.promptTokens ?? request.promptTokens));
    const result = this.o.sink.append(
      formatTraceLine({
        // A request that arrived before this file's first sampled one (it straddled a rotation) counts from 0.
        atMs: Math.max(0, s.atMs - (this.originMs ?? s.atMs)),
        model: request.model,
        inputTokens,
        outputTokens: out?.tokens ?? 0,
        ...(out?.estimated === true ? { outputEstimated: true } : {}),
        // Only full blocks the prompt has by its token count (the engine's count may be below the estimate).
        blockIds: this.ids.idsOf({ ...s.hashes, count: Math.min(s.hashes.count, Math.floor(inputTokens / this.o.blockTokens)) }),
        blockTokens: this.o.blockTokens,
      }),
    );
    if (result === 'dropped') return;
    this.recorded++;
    if (result === 'rotated') {
      // The next file is a trace of its own: fresh ids, timestamps from its first request.
      this.ids.reset();
      this.originMs = undefined;
      for (const w of this.inFlight.values()) this.originMs = Math.min(this.originMs ?? w.atMs, w.atMs);
    }
  }
}
