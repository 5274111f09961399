/**
 * Warms the request path before the router serves: synthetic ext_proc conversations, shaped
 * like Envoy's (request headers with FULL_DUPLEX_STREAMED protocol config, the JSON body,
 * Envoy's empty end_of_stream chunk), go through a scratch copy of the path — its own
 * ext_proc server on a loopback port, edge, scheduler built from the same config, pending
 * responses — through a grpc-js client on a loopback connection, and everything scratch is
 * thrown away after.
 *
 * Why: V8 compiles a function to optimized code only after it has run many times. A fresh
 * router answering one request at a time runs the whole path (grpc-js and Node's HTTP/2
 * server, the protobuf codec, the stream handler, prompt extraction, block hashing, the
 * plugins) in the interpreter for its first few hundred requests: on the 2-core development
 * machine that was ~2.5 ms per request from Envoy's message to the router's answer, against
 * ~0.5 ms once warm (docs/decisions/0207-warm-up-before-serving.md). The code is shared by
 * every instance, so warming scratch instances warms the real ones; no state is shared, so
 * nothing the warm-up does shows in the real scheduler, index, accounting or metrics.
 *
 * Bounded: `streams` conversations, stopped at `budgetMs`; a failure is logged and never
 * stops the router from starting.
 */
import * as grpc from '@grpc/grpc-js';
import { DEFAULT_POOL } from '../endpoints/endpoint-config.js';
import type { RouterConfig } from '../config/types.js';
import { ExtProcServer } from '../extproc/ext-proc-server.js';
import { extProcPackage } from '../extproc/ext-proc-proto.js';
import type { ProcessingRequest, ProcessingResponse__Output } from '../extproc/ext-proc-proto.js';
import type { ExternalProcessorClient } from '../gen/envoy/service/ext_proc/v3/ExternalProcessor.js';
import { PendingResponses } from '../extproc/pending-responses.js';
import { CACHEROUTE_METADATA_NAMESPACE, CACHEROUTE_TICKET_KEY } from '../extproc/response-builders.js';
import { AccessLogCompletion } from '../extproc/completion-mode.js';
import { EdgeContext } from '../extproc/edge-context.js';
import type { PromptExtractor } from '../extproc/request-mapping.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { Clock } from '../util/clock.js';
import { seededRng, type Rng } from '../util/rng.js';
import type { EdgeStats } from '../extproc/edge-stats.js';
import type { Scheduler } from '../scheduling/scheduler.js';
import { createScheduler } from './create-scheduler.js';

export interface WarmUpOptions {
  readonly config: RouterConfig;
  readonly streams: number;
  /** Stop after this long even if streams remain. */
  readonly budgetMs: number;
  readonly extract: PromptExtractor;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * Attaches the app's telemetry to the scratch scheduler (decision metrics, recent
   * decisions, stream counters), so that code is warmed too; absent: none.
   */
  readonly observe?: (scheduler: Scheduler) => ScratchTelemetry;
}

/** Telemetry attached to the scratch scheduler; stopped with it. */
export interface ScratchTelemetry {
  readonly edgeStats?: EdgeStats;
  stop?(): void | Promise<void>;
}

export interface WarmUpResult {
  /** Conversations that got their answers. */
  readonly streams: number;
  readonly elapsedMs: number;
  /** Why it stopped early, if it did. */
  readonly stopped?: string;
}

/** Engines of the scratch scheduler when the config lists none (discovery finds them later). */
const STAND_IN_ENDPOINTS = ['127.0.0.1:1', '127.0.0.1:2', '127.0.0.1:3', '127.0.0.1:4'];
/** Conversations in flight at once. */
const CONCURRENT_STREAMS = 8;
/** One conversation's longest wait for its answers. */
const STREAM_TIMEOUT_MS = 2000;

export async function warmUpRequestPath(o: WarmUpOptions): Promise<WarmUpResult> {
  const started = o.clock.nowMs();
  if (o.streams <= 0) return { streams: 0, elapsedMs: 0 };
  const config: RouterConfig =
    o.config.endpoints.length > 0
      ? o.config
      : { ...o.config, endpoints: STAND_IN_ENDPOINTS.map((address) => ({ address, pool: DEFAULT_POOL, models: [] })) };
  let server: ExtProcServer | undefined;
  let pending: PendingResponses | undefined;
  let telemetry: ScratchTelemetry | undefined;
  let client: ExternalProcessorClient | undefined;
  let done = 0;
  let stopped: string | undefined;
  try {
    const scheduler = createScheduler(config, { clock: o.clock, rng: seededRng(config.seed), logger: silentLogger });
    telemetry = o.observe?.(scheduler);
    // The same response path as the real edge: tickets handed over at the decision, or not.
    if (config.server.responseCompletion === 'access-log')
      pending = new PendingResponses({ clock: o.clock, maxAgeMs: config.server.responseIdleTimeoutMs });
    const edge = new EdgeContext({
      routing: scheduler,
      extract: o.extract,
      requests: config.requests,
      decisionHeader: config.telemetry.decisionHeader,
      clock: o.clock,
      logger: silentLogger,
      ...(pending !== undefined ? { completion: new AccessLogCompletion(pending) } : {}),
      ...(telemetry?.edgeStats !== undefined ? { stats: telemetry.edgeStats } : {}),
    });
    server = new ExtProcServer({
      address: '127.0.0.1:0',
      maxReceiveMessageBytes: config.server.maxReceiveMessageBytes,
      edge,
      logger: silentLogger,
    });
    const { port } = await server.start();
    const Client = extProcPackage().envoy.service.ext_proc.v3.ExternalProcessor;
    client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const traffic = new SyntheticTraffic(seededRng(config.seed + 1), modelOf(config));
    const c = client;
    let next = 0;
    // A few conversations at a time: V8 counts calls, not time, and the start is shorter.
    const lane = async (): Promise<void> => {
      while (next < o.streams && stopped === undefined) {
        if (o.clock.nowMs() - started > o.budgetMs) {
          stopped = `time budget of ${o.budgetMs} ms`;
          return;
        }
        const answers = await converse(c, traffic.next(next++));
        // Envoy's access log would report the response: end the request as served.
        const key = ticketKey(answers);
        if (key !== undefined) pending?.complete(key, { aborted: false, status: 200 });
        done++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENT_STREAMS }, lane));
  } catch (err) {
    stopped = err instanceof Error ? err.message : String(err);
  } finally {
    client?.close();
    await server?.stop({ graceMs: 0 }).catch(() => undefined);
    pending?.stop();
    try {
      await telemetry?.stop?.();
    } catch {
      // scratch telemetry: nothing to keep
    }
  }
  const result = { streams: done, elapsedMs: Math.round(o.clock.nowMs() - started), ...(stopped !== undefined ? { stopped } : {}) };
  o.logger.info('request path warmed up', {
    streams: result.streams,
    elapsed_ms: result.elapsedMs,
    ...(stopped !== undefined ? { stopped } : {}),
  });
  return result;
}

function modelOf(config: RouterConfig): string {
  for (const e of config.endpoints) if (e.models.length > 0) return e.models[0]!;
  return 'warm-up';
}

/** The key the decision put into `cacheroute.ticket` (access-log completion). */
function ticketKey(answers: readonly ProcessingResponse__Output[]): string | undefined {
  for (const a of answers) {
    const v = a.dynamic_metadata?.fields?.[CACHEROUTE_METADATA_NAMESPACE]?.structValue?.fields?.[CACHEROUTE_TICKET_KEY]?.stringValue;
    if (v !== undefined && v !== '') return v;
  }
  return undefined;
}

/**
 * Chat and completions requests over a few shared system prompts (so prefixes match, as in
 * real traffic) with a varying question, 2–7 KB each; seeded, so every start is alike.
 */
class SyntheticTraffic {
  private readonly systems: string[];

  constructor(
    private readonly rng: Rng,
    private readonly model: string,
  ) {
    this.systems = Array.from({ length: 4 }, () => this.words(300 + rng.int(600)));
  }

  next(i: number): ProcessingRequest[] {
    const chat = i % 3 !== 0;
    const system = this.systems[this.rng.int(this.systems.length)]!;
    const question = this.words(20 + this.rng.int(60));
    const body = chat
      ? {
          model: this.model,
          messages: [
            { role: 'system', content: system },
            { role: 'user', content: question },
          ],
          max_tokens: 64,
          stream: true,
        }
      : { model: this.model, prompt: `${system}\n${question}`, max_tokens: 64, stream: true };
    const headers: Record<string, string> = {
      ':method': 'POST',
      ':path': chat ? '/v1/chat/completions' : '/v1/completions',
      ':authority': 'warm-up',
      ':scheme': 'http',
      'content-type': 'application/json',
      'x-request-id': `warm-up-${i}`,
    };
    return [
      {
        request_headers: {
          headers: { headers: Object.entries(headers).map(([key, v]) => ({ key, raw_value: Buffer.from(v, 'utf8') })) },
          end_of_stream: false,
        },
        protocol_config: { request_body_mode: 'FULL_DUPLEX_STREAMED', response_body_mode: 'NONE' },
      },
      { request_body: { body: Buffer.from(JSON.stringify(body), 'utf8'), end_of_stream: false } },
      { request_body: { body: Buffer.alloc(0), end_of_stream: true } },
    ];
  }

  private words(n: number): string {
    const out: string[] = [];
    for (let k = 0; k < n; k++) out.push(`w${this.rng.int(5000).toString(36)}`);
    return out.join(' ');
  }
}

/** One ext_proc stream: sends `messages`, half-closes, resolves with the answers at its end (never rejects). */
function converse(client: ExternalProcessorClient, messages: readonly ProcessingRequest[]): Promise<ProcessingResponse__Output[]> {
  return new Promise((resolve) => {
    const call = client.Process({ deadline: new Date(Date.now() + STREAM_TIMEOUT_MS) });
    const answers: ProcessingResponse__Output[] = [];
    call.on('data', (m: ProcessingResponse__Output) => answers.push(m));
    // A failed or timed-out stream ends with an error status: the answers so far count.
    call.on('error', () => undefined);
    call.on('status', () => resolve(answers));
    for (const m of messages) call.write(m);
    call.end();
  });
}
