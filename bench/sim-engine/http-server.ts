/**
 * One simulated engine behind a node:http server: the OpenAI endpoints, the health/info/
 * load endpoints that Envoy, our router and the peer routers (sglang-router, vllm-router)
 * probe, vLLM-named Prometheus metrics, JSON stats for tests, and admin knobs for
 * staleness experiments. Every response carries `x-engine-id` so callers can tell which
 * engine served them. The simulation itself lives in BatchingEngine; this file only
 * translates HTTP to engine calls and back. For P/D disaggregation it speaks both of vLLM's
 * forms (`--kv-connector`): a shared store on a directory (directory-kv-store.ts) and the
 * kv_transfer_params exchange (kv-transfer-params.ts, with POST /internal/kv-read as the
 * side channel a decode engine reads a prefill engine's blocks over).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../../src/util/clock.js';
import { seededRng, type Rng } from '../../src/util/rng.js';
import {
  BatchingEngine,
  CapacityError,
  type EngineModelConfig,
  type SequenceHandle,
  type SequenceResult,
} from '../../src/simulate/engine/batching-engine.js';
import { DEFAULT_SIM_ENGINE_CONFIG, type SimEngineConfig } from './engine-config.js';
import { MetricsView } from './metrics-view.js';
import {
  ApiError,
  completionBody,
  errorBody,
  parseInferenceRequest,
  sseData,
  streamChunk,
  usageChunk,
  usageOf,
  type ApiKind,
  type InferenceRequest,
  type ResponseMeta,
} from './openai-protocol.js';
import { chatPrompt, completionPrompt, isRecord, promptTokenIds } from '../../src/simulate/engine/prompt-template.js';
import { PROMETHEUS_CONTENT_TYPE, renderVllmMetrics } from './prometheus-text.js';
import { timerStepScheduler, type StepScheduler } from '../../src/simulate/engine/step-scheduler.js';
import { KvEventPublisher } from './kv-event-publisher.js';
import { modelPromptTokenIds } from '../../src/simulate/engine/model-prompt-tokens.js';
import { ModelTokenizer } from '../../src/tokenization/model-tokenizer.js';
import { outputLength, tokenText } from './text-generator.js';
import { blockHashes } from '../../src/simulate/engine/block-hash.js';
import { DirectoryKvStore } from './directory-kv-store.js';
import { KvLeases, readRemoteKv, type KvTransferAsk } from './kv-transfer-params.js';

/** A decode engine's read of a prefill engine's blocks gives up after this long. */
const KV_READ_TIMEOUT_MS = 10_000;

/** Wall-clock start of this process (Prometheus `process_start_time_seconds`). */
const PROCESS_START_TIME_SECONDS = Math.round(Date.now() - performance.now()) / 1000;

/** Largest accepted request body. */
const MAX_BODY_BYTES = 64 * 1024 * 1024;
/**
 * Longer than Envoy's and Node's client keep-alive defaults, so the engine is not the side
 * that closes an idle pooled connection just as a proxy reuses it (that race shows up as
 * sporadic 503 "connection termination" through Envoy).
 */
const KEEP_ALIVE_TIMEOUT_MS = 75_000;

export interface SimEngineServerDeps {
  readonly clock?: Clock;
  readonly scheduler?: StepScheduler;
}

/** Runtime-adjustable settings of POST /admin/config, by normalised name. */
const ADMIN_KEYS: Record<string, keyof EngineModelConfig | 'metricsDelayMs'> = {
  kvcacheblocks: 'kvCacheBlocks',
  maxnumseqs: 'maxNumSeqs',
  maxbatchedtokens: 'maxBatchedTokens',
  maxnumbatchedtokens: 'maxBatchedTokens',
  stepoverheadms: 'stepOverheadMs',
  prefillmspertoken: 'prefillMsPerToken',
  decodemspersec: 'decodeMsPerSeq',
  decodemsperseq: 'decodeMsPerSeq',
  prefillcontextmsperktoken: 'prefillContextMsPerKToken',
  decodecontextmsperktoken: 'decodeContextMsPerKToken',
  timescale: 'timeScale',
  metricsdelayms: 'metricsDelayMs',
};

export class SimEngineServer {
  readonly engine: BatchingEngine;
  private readonly server: Server;
  private readonly view: MetricsView;
  private readonly rng: Rng;
  private readonly clock: Clock;
  private readonly scheduler: StepScheduler;
  private cfg: SimEngineConfig;
  private engineId: string;
  private boundPort = 0;
  private requestSeq = 0;
  private started = false;
  private draining = false;
  private stopping: Promise<void> | undefined;
  private tokenizer: ModelTokenizer | undefined;
  /** Set when the engine publishes KV events (--kv-events-port). */
  kvPublisher: KvEventPublisher | undefined;
  /** Blocks kept for remote decode engines (`--kv-connector nixl`). */
  readonly kvLeases: KvLeases;
  private kvReadFailures = 0;

  constructor(config: Partial<SimEngineConfig> = {}, deps: SimEngineServerDeps = {}) {
    this.cfg = { ...DEFAULT_SIM_ENGINE_CONFIG, ...config };
    this.clock = deps.clock ?? systemClock;
    this.scheduler = deps.scheduler ?? timerStepScheduler;
    this.engineId = this.cfg.id ?? `${this.cfg.host}:${this.cfg.port}`;
    this.rng = seededRng(this.cfg.seed);
    let view: MetricsView | undefined;
    const kvStore =
      this.cfg.kvConnector === 'shared-store' && this.cfg.kvStoreDir !== undefined ? new DirectoryKvStore(this.cfg.kvStoreDir) : undefined;
    this.engine = new BatchingEngine(this.cfg, {
      clock: this.clock,
      scheduler: this.scheduler,
      onChange: () => view?.record(),
      ...(kvStore !== undefined ? { kvStore } : {}),
    });
    this.kvLeases = new KvLeases(
      () => this.engineId,
      () => ({ host: this.cfg.host, port: this.boundPort }),
      () => this.clock.nowMs(),
    );
    view = new MetricsView(() => this.engine.snapshot(), this.clock, this.cfg.metricsDelayMs);
    this.view = view;
    this.server = createServer({ keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS }, (req, res) => this.handle(req, res));
    this.server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 5_000;
  }

  /** `x-engine-id` value: --id, else `<host>:<port>` with the bound port. */
  get id(): string {
    return this.engineId;
  }
  get port(): number {
    return this.boundPort;
  }
  get url(): string {
    const host = this.cfg.host.includes(':') ? `[${this.cfg.host}]` : this.cfg.host;
    return `http://${host}:${this.boundPort}`;
  }
  get config(): SimEngineConfig {
    return { ...this.cfg, ...this.engine.config, metricsDelayMs: this.view.metricsDelayMs };
  }

  /** Binds and listens; resolves with the bound port (useful with port 0). */
  async start(): Promise<{ port: number; id: string; url: string }> {
    if (this.started) throw new Error('SimEngineServer already started');
    this.started = true;
    if (this.cfg.tokenizerDir !== undefined) this.tokenizer = await ModelTokenizer.fromDirectory(this.cfg.tokenizerDir);
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => reject(err);
      this.server.once('error', onError);
      this.server.listen(this.cfg.port, this.cfg.host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    this.boundPort = (this.server.address() as AddressInfo).port;
    const kvPort =
      this.cfg.kvEventsPort ?? (this.cfg.kvEventsPortOffset !== undefined ? this.boundPort + this.cfg.kvEventsPortOffset : undefined);
    if (kvPort !== undefined) {
      const pub = new KvEventPublisher({ endpoint: `tcp://${this.cfg.host}:${kvPort}`, blockSize: this.cfg.blockSize });
      await pub.bind();
      pub.attach(this.engine.kvCache);
      this.kvPublisher = pub;
    }
    if (this.cfg.id === undefined) this.engineId = `${this.cfg.host}:${this.boundPort}`;
    return { port: this.boundPort, id: this.engineId, url: this.url };
  }

  /**
   * Stops accepting connections, lets in-flight requests finish for up to `graceMs`, then
   * fails what is left and closes every connection. Idempotent.
   */
  stop(graceMs = 5_000): Promise<void> {
    this.stopping ??= this.doStop(graceMs);
    return this.stopping;
  }

  private async doStop(graceMs: number): Promise<void> {
    if (!this.started) {
      this.engine.stop();
      await this.kvPublisher?.close();
      return;
    }
    this.draining = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([closed, grace]);
    clearTimeout(timer);
    this.engine.stop();
    this.server.closeAllConnections();
    await closed;
    await this.kvPublisher?.close();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    res.setHeader('x-engine-id', this.engineId);
    if (this.draining) res.setHeader('connection', 'close');
    // While draining, close each keep-alive connection as soon as its last response ends.
    res.on('finish', () => {
      if (this.draining) setImmediate(() => this.server.closeIdleConnections());
    });
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    this.route(method, path, req, res).catch((err: unknown) => {
      const api = err instanceof ApiError ? err : new ApiError(500, err instanceof Error ? err.message : String(err));
      this.sendError(res, api);
    });
  }

  private async route(method: string, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const get = method === 'GET' || method === 'HEAD';
    const post = method === 'POST';
    switch (path) {
      case '/v1/chat/completions':
      case '/v1/completions':
        if (!post) return this.methodNotAllowed(res);
        return this.inference(path === '/v1/chat/completions' ? 'chat' : 'completions', req, res);
      case '/health':
      case '/health/ready':
      case '/health_generate':
      case '/ping':
        res.writeHead(200, { 'content-type': 'application/json' }).end(path === '/health' ? '' : '{"status":"ok"}');
        return;
      case '/v1/models':
        if (!get) return this.methodNotAllowed(res);
        return this.json(res, 200, {
          object: 'list',
          data: [
            {
              id: this.cfg.model,
              object: 'model',
              created: 0,
              owned_by: 'cacheroute-sim-engine',
              root: this.cfg.model,
              parent: null,
              max_model_len: this.cfg.maxModelLen,
            },
          ],
        });
      case '/get_server_info':
      case '/server_info':
        return this.json(res, 200, this.serverInfo());
      case '/get_model_info':
      case '/model_info':
        return this.json(res, 200, {
          model_id: this.cfg.model,
          model_path: this.cfg.model,
          served_model_name: this.cfg.model,
          is_generation: true,
          max_model_len: this.cfg.maxModelLen,
        });
      case '/kv_event_sources': {
        // vLLM's shape: publisher config per data-parallel rank (empty without events).
        const pub = this.kvPublisher;
        if (pub === undefined) return this.json(res, 200, {});
        const port = pub.endpoint.slice(pub.endpoint.lastIndexOf(':') + 1);
        return this.json(res, 200, {
          '0': { enable_kv_cache_events: true, publisher: 'zmq', endpoint: `tcp://*:${port}`, topic: 'kv-events' },
        });
      }
      case '/load': {
        const s = this.engine.snapshot();
        return this.json(res, 200, { server_load: s.running + s.waiting, running: s.running, waiting: s.waiting });
      }
      case '/get_load': {
        const s = this.engine.snapshot();
        return this.json(res, 200, [
          { dp_rank: 0, num_reqs: s.running + s.waiting, num_waiting_reqs: s.waiting, num_tokens: s.kvUsedBlocks * s.blockSize },
        ]);
      }
      case '/metrics':
        if (!get) return this.methodNotAllowed(res);
        res
          .writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE })
          .end(renderVllmMetrics(this.view.current(), this.cfg.model, PROCESS_START_TIME_SECONDS));
        return;
      case '/stats':
        if (!get) return this.methodNotAllowed(res);
        return this.json(res, 200, this.stats());
      case '/tokenize':
        if (!post) return this.methodNotAllowed(res);
        return this.tokenizeEndpoint(req, res);
      case '/flush_cache':
      case '/reset_prefix_cache':
        this.engine.clearCache();
        return this.json(res, 200, { status: 'ok' });
      case '/admin/freeze-metrics':
        if (!post) return this.methodNotAllowed(res);
        this.view.freeze();
        return this.json(res, 200, { frozen: true });
      case '/admin/unfreeze-metrics':
        if (!post) return this.methodNotAllowed(res);
        this.view.unfreeze();
        return this.json(res, 200, { frozen: false });
      case '/admin/reset':
        if (!post) return this.methodNotAllowed(res);
        this.engine.clearCache();
        this.engine.resetCounters();
        this.view.resetHistory();
        return this.json(res, 200, { status: 'ok' });
      case '/admin/config':
        if (get) return this.json(res, 200, this.config);
        if (!post) return this.methodNotAllowed(res);
        return this.adminConfig(req, res);
      case '/internal/kv-read':
        if (!post) return this.methodNotAllowed(res);
        return this.kvRead(req, res);
      default:
        throw new ApiError(404, `no route for ${method} ${path}`);
    }
  }

  private async inference(kind: ApiKind, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const r = parseInferenceRequest(kind, raw, this.cfg.defaultMaxTokens);
    if (this.cfg.strictModel && r.model !== undefined && r.model !== this.cfg.model) {
      throw new ApiError(404, `The model \`${r.model}\` does not exist.`);
    }
    let tokens: number[];
    try {
      tokens = this.tokenizer !== undefined ? modelPromptTokenIds(this.tokenizer, raw) : promptTokenIds(r.prompt, this.cfg.charsPerToken);
    } catch (err) {
      throw new ApiError(400, err instanceof Error ? err.message : String(err));
    }
    if (tokens.length + r.maxTokens > this.cfg.maxModelLen) {
      throw new ApiError(
        400,
        `This model's maximum context length is ${this.cfg.maxModelLen} tokens. However, you requested ` +
          `${tokens.length + r.maxTokens} tokens (${tokens.length} in the messages, ${r.maxTokens} in the completion).`,
      );
    }
    const nixl = this.cfg.kvConnector === 'nixl' ? r.kvTransfer : undefined;
    const externalBlocks = nixl?.kind === 'remote-prefill' ? await this.loadRemoteKv(nixl, tokens, r.cacheSalt) : 0;
    if (res.destroyed || req.socket.destroyed) return;
    const n = outputLength(r.maxTokens, r.ignoreEos, this.rng);
    const seqNo = ++this.requestSeq;
    const meta: ResponseMeta = {
      id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${this.boundPort}-${seqNo}`,
      created: Math.floor(Date.now() / 1000),
      model: r.model ?? this.cfg.model,
    };
    const wordSeed = (this.cfg.seed * 0x9e3779b1) ^ seqNo;
    const finishReason = n >= r.maxTokens ? 'length' : 'stop';

    const overheadMs = r.prompt.kind === 'text' ? this.cfg.tokenizeOverheadMs * this.engine.config.timeScale : 0;
    if (overheadMs > 0) {
      await new Promise<void>((resolve) => this.scheduler.schedule(overheadMs, resolve));
      if (res.destroyed || req.socket.destroyed) return; // the client left before the request reached the scheduler
    }
    let handle: SequenceHandle;
    const stream = r.stream ? new SseWriter(res, kind, meta, r) : undefined;
    let text = '';
    try {
      handle = this.engine.submit(
        {
          promptTokens: tokens,
          outputTokens: n,
          finishReason,
          ...(r.cacheSalt !== undefined ? { cacheSalt: r.cacheSalt } : {}),
          ...(externalBlocks > 0 ? { externalBlocks } : {}),
        },
        {
          onToken: (index) => {
            const piece = tokenText(wordSeed, index);
            if (stream) stream.token(index, piece);
            else text += piece;
          },
          onFinish: (result: SequenceResult) => {
            const usage = usageOf(result.promptTokens, result.completionTokens, result.cachedTokens);
            if (stream) stream.finish(result.finishReason, usage);
            else {
              const body = completionBody(kind, meta, text, result.finishReason, usage);
              // A prefill leg for a remote decode: keep the prompt's blocks and name them.
              const lease =
                nixl?.kind === 'remote-decode'
                  ? { kv_transfer_params: this.kvLeases.grant(blockHashes(tokens, this.cfg.blockSize, r.cacheSalt), tokens.length) }
                  : {};
              this.json(res, 200, { ...body, ...lease });
            }
          },
          onError: (err) => {
            const api = new ApiError(err instanceof CapacityError ? 400 : 503, err.message);
            if (stream?.started) stream.fail(api);
            else this.sendError(res, api);
          },
        },
      );
    } catch (err) {
      if (err instanceof CapacityError) throw new ApiError(400, err.message);
      throw err;
    }
    stream?.open();
    res.on('close', () => {
      if (!res.writableFinished) handle.abort();
    });
  }

  /**
   * Reads a prefill engine's blocks for this prompt: how many leading prompt blocks to load.
   * A failed or mismatched read fails the request (kv_load_failure_policy `fail`) or leaves
   * it to compute them (`recompute`).
   */
  private async loadRemoteKv(
    ask: Extract<KvTransferAsk, { kind: 'remote-prefill' }>,
    tokens: readonly number[],
    salt?: string,
  ): Promise<number> {
    const got = await readRemoteKv(ask, KV_READ_TIMEOUT_MS);
    let why: string | undefined = typeof got === 'string' ? got : undefined;
    let n = 0;
    if (typeof got !== 'string') {
      const own = blockHashes(tokens, this.cfg.blockSize, salt);
      while (n < own.length && n < got.length && own[n] === got[n]) n++;
      if (n === 0 && own.length > 0) why = "the transferred blocks are not this prompt's";
    }
    if (why === undefined) return n;
    this.kvReadFailures++;
    if (this.cfg.kvLoadFailure === 'fail') throw new ApiError(500, `KV transfer failed: ${why}`);
    return 0;
  }

  /** POST /internal/kv-read: a decode engine reads the blocks a lease keeps (once). */
  private async kvRead(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJsonObject(req);
    const id = body['remote_request_id'];
    const ids = body['remote_block_ids'];
    if (body['remote_engine_id'] !== this.engineId) throw new ApiError(404, 'not this engine');
    if (typeof id !== 'string' || !Array.isArray(ids) || !ids.every((x) => typeof x === 'number')) {
      throw new ApiError(400, 'expected remote_request_id and remote_block_ids');
    }
    const hashes = this.kvLeases.read(id, ids as number[]);
    if (hashes === undefined) throw new ApiError(404, 'no such KV lease (unknown, expired or already read)');
    this.json(res, 200, { block_hashes: hashes });
  }

  private async tokenizeEndpoint(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJsonObject(req);
    let prompt: ReturnType<typeof chatPrompt>;
    try {
      prompt = body['messages'] !== undefined ? chatPrompt(body) : completionPrompt(body);
    } catch (err) {
      throw new ApiError(400, err instanceof Error ? err.message : String(err));
    }
    const tokens = promptTokenIds(prompt, this.cfg.charsPerToken);
    const salt = typeof body['cache_salt'] === 'string' ? body['cache_salt'] : undefined;
    this.json(res, 200, {
      count: tokens.length,
      max_model_len: this.cfg.maxModelLen,
      tokens,
      cached_blocks: this.engine.cachedPrefixBlocks(tokens, salt),
      block_size: this.cfg.blockSize,
    });
  }

  private async adminConfig(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJsonObject(req);
    const patch: Record<string, number> = {};
    let delay: number | undefined;
    for (const [k, v] of Object.entries(body)) {
      const key = ADMIN_KEYS[k.toLowerCase().replace(/[-_]/g, '')];
      if (!key) throw new ApiError(400, `unknown or read-only setting '${k}'`);
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new ApiError(400, `setting '${k}' must be a number`);
      if (key === 'metricsDelayMs') delay = v;
      else patch[key] = v;
    }
    try {
      if (delay !== undefined) this.view.setDelay(delay);
      this.engine.reconfigure(patch);
    } catch (err) {
      throw new ApiError(400, err instanceof Error ? err.message : String(err));
    }
    this.json(res, 200, this.config);
  }

  private serverInfo(): object {
    const c = this.engine.config;
    return {
      engine_id: this.engineId,
      model_id: this.cfg.model,
      model_path: this.cfg.model,
      served_model_name: this.cfg.model,
      version: 'cacheroute-sim-engine',
      dp_size: 1,
      tp_size: 1,
      max_num_seqs: c.maxNumSeqs,
      max_num_batched_tokens: c.maxBatchedTokens,
      max_model_len: this.cfg.maxModelLen,
      block_size: c.blockSize,
      num_gpu_blocks: c.kvCacheBlocks,
      chars_per_token: this.cfg.charsPerToken,
    };
  }

  /** GET /stats: live values (never delayed or frozen). */
  stats(): SimEngineStats {
    const s = this.engine.snapshot();
    const c = s.counters;
    return {
      id: this.engineId,
      model: this.cfg.model,
      requestsServed: c.success.stop + c.success.length,
      requestsAborted: c.aborted,
      requestsRejected: c.rejected,
      running: s.running,
      waiting: s.waiting,
      promptTokens: c.promptTokens,
      prefixQueryTokens: c.prefixQueryTokens,
      cachedTokens: c.prefixHitTokens,
      generationTokens: c.generationTokens,
      ttftSamples: c.ttft.count,
      ttftSumSeconds: c.ttft.sum,
      preemptions: c.preemptions,
      steps: c.steps,
      kvCapacityBlocks: s.kvCapacityBlocks,
      kvUsedBlocks: s.kvUsedBlocks,
      kvFreeCachedBlocks: s.kvFreeCachedBlocks,
      kvEvictions: s.kvEvictions,
      kvUsage: s.kvUsage,
      kvTransfers: c.kvTransfers,
      kvTransferTokens: c.kvTransferTokens,
      kvTransferMs: c.kvTransferMs,
      kvReadFailures: this.kvReadFailures,
      kvLeases: this.kvLeases.size,
      metricsFrozen: this.view.isFrozen,
      metricsDelayMs: this.view.metricsDelayMs,
    };
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    if (res.headersSent) return;
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  }

  private sendError(res: ServerResponse, err: ApiError): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.json(res, err.status, errorBody(err));
  }

  private methodNotAllowed(res: ServerResponse): void {
    this.sendError(res, new ApiError(405, 'method not allowed'));
  }
}

export interface SimEngineStats {
  readonly id: string;
  readonly model: string;
  readonly requestsServed: number;
  readonly requestsAborted: number;
  readonly requestsRejected: number;
  readonly running: number;
  readonly waiting: number;
  /** Prompt tokens of requests that got their first token. */
  readonly promptTokens: number;
  /** vllm:prefix_cache_queries_total. */
  readonly prefixQueryTokens: number;
  /** vllm:prefix_cache_hits_total. */
  readonly cachedTokens: number;
  readonly generationTokens: number;
  readonly ttftSamples: number;
  readonly ttftSumSeconds: number;
  readonly preemptions: number;
  readonly steps: number;
  readonly kvCapacityBlocks: number;
  readonly kvUsedBlocks: number;
  readonly kvFreeCachedBlocks: number;
  readonly kvEvictions: number;
  readonly kvUsage: number;
  /** KV loads from another engine or the shared store (P/D), their tokens and total time. */
  readonly kvTransfers: number;
  readonly kvTransferTokens: number;
  readonly kvTransferMs: number;
  /** Reads of a prefill engine's blocks that failed (`nixl`). */
  readonly kvReadFailures: number;
  /** Blocks kept for remote decode engines, by lease. */
  readonly kvLeases: number;
  readonly metricsFrozen: boolean;
  readonly metricsDelayMs: number;
}

/** Writes one request's SSE stream. Headers go out at once so clients see acceptance before the first token. */
class SseWriter {
  started = false;
  constructor(
    private readonly res: ServerResponse,
    private readonly kind: ApiKind,
    private readonly meta: ResponseMeta,
    private readonly req: InferenceRequest,
  ) {}

  open(): void {
    if (this.started || this.res.headersSent) return;
    this.started = true;
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    this.res.flushHeaders();
  }

  token(index: number, piece: string): void {
    this.open();
    if (index === 0 && this.kind === 'chat') this.res.write(sseData(streamChunk('chat', this.meta, '', null, true)));
    this.res.write(sseData(streamChunk(this.kind, this.meta, piece, null)));
  }

  finish(reason: string, usage: ReturnType<typeof usageOf>): void {
    this.open();
    this.res.write(sseData(streamChunk(this.kind, this.meta, '', reason)));
    if (this.req.includeUsage) this.res.write(sseData(usageChunk(this.kind, this.meta, usage)));
    this.res.end(sseData('[DONE]'));
  }

  fail(err: ApiError): void {
    this.res.end(sseData(errorBody(err)) + sseData('[DONE]'));
  }
}

/** The request body as a JSON object, or a 400 ApiError saying what is wrong with it. */
async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const raw = await readBody(req);
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new ApiError(400, 'request body is not valid JSON');
  }
  if (!isRecord(body)) throw new ApiError(400, 'request body must be a JSON object');
  return body;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      if (size > MAX_BODY_BYTES) return; // draining an oversized body; the 413 is already out
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        chunks.length = 0;
        reject(new ApiError(413, `request body larger than ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
