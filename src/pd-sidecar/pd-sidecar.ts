/**
 * `cacheroute pd-sidecar`: the decode-side half of prefill/decode disaggregation (llm-d's
 * routing sidecar, in our own words). It listens in front of one decode engine. A request the
 * router split carries the prefill engine in `x-prefiller-host-port`; the sidecar then
 *   1. runs the prefill leg on that engine: the same body with `max_tokens: 1`, not streamed
 *      (`connector: shared-store`: the engines share a KV store, e.g. vLLM's ExampleConnector
 *      on a shared directory, and match by the prompt's tokens), or additionally with
 *      `kv_transfer_params: {do_remote_decode: true}` (`connector: nixl`: vLLM's NIXL
 *      protocol, whose answer carries the params the decode engine pulls the KV with);
 *   2. runs the decode leg on its own engine (with the returned `kv_transfer_params` for
 *      nixl) and streams that response back unchanged.
 * A request without the header goes to the decode engine as it came.
 *
 * Failures never hang and never lose the request: a prefill leg that fails, times out or
 * returns no `kv_transfer_params` (nixl) is dropped and the request is served aggregated on
 * the decode engine (response header `x-cacheroute-pd: aggregated-prefill-failed`); a decode
 * engine that rejects the transferred KV (an error answer to a request carrying
 * `kv_transfer_params`) gets the request once more without them
 * (`aggregated-kv-rejected`). A header that is not a loopback or allowed `ip:port` literal is
 * refused with 400: the router writes this header and strips any client's, so a bad value is
 * a configuration error or a request that bypassed the router. Prompts are never logged.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { PREFILLER_HEADER } from '../extproc/response-builders.js';
import type { Logger } from '../logging/logger.js';
import { formatHostPort, parseHostPort } from '../util/host-port.js';

/** Response header saying how the sidecar served the request. */
export const PD_RESULT_HEADER = 'x-cacheroute-pd';

export type PdConnector = 'shared-store' | 'nixl';
export const PD_CONNECTORS = ['shared-store', 'nixl'] as const satisfies readonly PdConnector[];

export type PdResult = 'passthrough' | 'split' | 'aggregated-prefill-failed' | 'aggregated-kv-rejected';

export interface PdSidecarOptions {
  /** `host:port` to listen on (port 0 = any). */
  readonly listen: string;
  /** The decode engine, `ip:port`. */
  readonly decode: string;
  readonly connector: PdConnector;
  /** Prefill legs taking longer are abandoned (the request is served aggregated). */
  readonly prefillTimeoutMs: number;
  /** Decode legs (until response headers) taking longer fail with 504. */
  readonly decodeTimeoutMs: number;
  /** Request bodies above this size are refused with 413. */
  readonly maxBodyBytes: number;
  /** Prefill engines besides loopback ones a header may name (`ip:port`). */
  readonly allowedPrefillers?: readonly string[];
  readonly logger: Logger;
}

export const PD_SIDECAR_DEFAULTS = { prefillTimeoutMs: 60_000, decodeTimeoutMs: 60_000, maxBodyBytes: 32 * 1024 * 1024 } as const;

/** The prefill leg's `kv_transfer_params` for NixlConnector, as vllm-router 0.1.17 sends them. */
export const NIXL_PREFILL_PARAMS = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
} as const;

const SPLIT_PATHS = new Set(['/v1/completions', '/v1/chat/completions']);

interface Answer {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: IncomingMessage;
}

export class PdSidecar {
  private server: Server | undefined;
  private readonly allowed: ReadonlySet<string>;
  private readonly decode: { host: string; port: number };
  /** Requests served per result (for /metrics-free inspection and tests). */
  readonly counts: Record<PdResult, number> = { passthrough: 0, split: 0, 'aggregated-prefill-failed': 0, 'aggregated-kv-rejected': 0 };

  constructor(private readonly opts: PdSidecarOptions) {
    this.allowed = new Set(opts.allowedPrefillers ?? []);
    const d = parseHostPort(opts.decode);
    if (typeof d === 'string') throw new RangeError(`decode engine "${opts.decode}": ${d}`);
    this.decode = d;
  }

  /** Starts listening; resolves with the bound port. */
  async start(): Promise<number> {
    const hp = listenAddress(this.opts.listen);
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.fail(res, 502, `sidecar error: ${errText(err)}`));
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(hp.port, hp.host, () => resolve());
    });
    const addr = server.address();
    return typeof addr === 'object' && addr !== null ? addr.port : hp.port;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s === undefined) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, this.opts.maxBodyBytes);
    if (body === undefined) return this.fail(res, 413, 'request body too large');
    const prefiller = req.headers[PREFILLER_HEADER];
    const path = (req.url ?? '/').split('?')[0]!;
    if (prefiller === undefined || req.method !== 'POST' || !SPLIT_PATHS.has(path)) {
      this.counts.passthrough++;
      return this.relay(res, await this.toDecode(req, body), 'passthrough');
    }
    const target = this.prefillTarget(Array.isArray(prefiller) ? prefiller.join(',') : prefiller);
    if (typeof target === 'string') return this.fail(res, 400, target);
    let json: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      json = parsed as Record<string, unknown>;
    } catch {
      return this.fail(res, 400, 'request body is not a JSON object');
    }
    const t0 = Date.now();
    const params = await this.prefillLeg(req, path, json, target);
    const prefillMs = Date.now() - t0;
    if (params === undefined) {
      this.counts['aggregated-prefill-failed']++;
      return this.relay(res, await this.toDecode(req, body), 'aggregated-prefill-failed');
    }
    const decodeBody = params === true ? body : Buffer.from(JSON.stringify({ ...json, kv_transfer_params: params }));
    const answer = await this.toDecode(req, decodeBody);
    if (params !== true && answer.status >= 400) {
      answer.body.resume();
      this.counts['aggregated-kv-rejected']++;
      this.opts.logger.warn('decode engine rejected the transferred KV; serving aggregated', { status: answer.status });
      return this.relay(res, await this.toDecode(req, body), 'aggregated-kv-rejected');
    }
    this.counts.split++;
    this.opts.logger.debug('split request', { prefiller: formatHostPort(target.host, target.port), prefill_ms: prefillMs });
    return this.relay(res, answer, 'split');
  }

  /** The header's engine, or why it is refused. */
  private prefillTarget(value: string): { host: string; port: number } | string {
    const hp = parseHostPort(value.trim());
    if (typeof hp === 'string' || isIP(hp.host) === 0) return `${PREFILLER_HEADER}: expected one ip:port literal`;
    const id = formatHostPort(hp.host, hp.port);
    const loopback = (isIP(hp.host) === 4 && hp.host.startsWith('127.')) || hp.host === '::1';
    if (!loopback && !this.allowed.has(id)) return `${PREFILLER_HEADER}: ${id} is not an allowed prefill engine`;
    return hp;
  }

  /**
   * The prefill leg: true when done (shared store), the decode leg's `kv_transfer_params`
   * (nixl), or undefined when it failed (the caller serves the request aggregated).
   */
  private async prefillLeg(
    req: IncomingMessage,
    path: string,
    json: Record<string, unknown>,
    target: { host: string; port: number },
  ): Promise<true | Record<string, unknown> | undefined> {
    const leg: Record<string, unknown> = { ...json, max_tokens: 1, stream: false };
    delete leg['stream_options'];
    if ('max_completion_tokens' in leg) leg['max_completion_tokens'] = 1;
    if (this.opts.connector === 'nixl') leg['kv_transfer_params'] = { ...NIXL_PREFILL_PARAMS };
    try {
      const answer = await send(target, 'POST', path, forwardHeaders(req), Buffer.from(JSON.stringify(leg)), this.opts.prefillTimeoutMs);
      const text = await readAll(answer.body, this.opts.maxBodyBytes, this.opts.prefillTimeoutMs);
      if (answer.status < 200 || answer.status >= 300) {
        this.opts.logger.warn('prefill leg failed; serving aggregated', { status: answer.status });
        return undefined;
      }
      if (this.opts.connector === 'shared-store') return true;
      const params = (JSON.parse(text) as { kv_transfer_params?: unknown }).kv_transfer_params;
      if (typeof params !== 'object' || params === null) {
        this.opts.logger.warn('prefill answer has no kv_transfer_params; serving aggregated');
        return undefined;
      }
      return params as Record<string, unknown>;
    } catch (err) {
      this.opts.logger.warn('prefill leg failed; serving aggregated', { error: errText(err) });
      return undefined;
    }
  }

  private toDecode(req: IncomingMessage, body: Buffer): Promise<Answer> {
    return send(this.decode, req.method ?? 'GET', req.url ?? '/', forwardHeaders(req), body, this.opts.decodeTimeoutMs);
  }

  /** Streams an engine answer back unchanged (plus the result header). */
  private relay(res: ServerResponse, a: Answer, result: PdResult): void {
    const headers = { ...a.headers, [PD_RESULT_HEADER]: result };
    delete headers['content-length'];
    delete headers['transfer-encoding'];
    delete headers['connection'];
    res.writeHead(a.status, headers);
    a.body.pipe(res);
    res.on('close', () => a.body.destroy());
  }

  private fail(res: ServerResponse, status: number, message: string): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message, type: 'pd_sidecar_error', code: status } }));
  }
}

/** Request headers for an engine leg: hop-by-hop ones and the prefiller header dropped. */
function forwardHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP.has(k) || k === PREFILLER_HEADER) continue;
    out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'upgrade', 'te', 'trailer']);

function send(
  to: { host: string; port: number },
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  timeoutMs: number,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const r = httpRequest(
      { host: to.host, port: to.port, method, path, headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 502, headers: res.headers, body: res });
      },
    );
    const timer = setTimeout(() => r.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    r.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    r.end(body);
  });
}

/** The whole request body, or undefined past `max` bytes. */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n <= max) parts.push(c);
    });
    req.on('end', () => resolve(n > max ? undefined : Buffer.concat(parts)));
    req.on('error', reject);
  });
}

function readAll(s: IncomingMessage, max: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`prefill answer not complete within ${timeoutMs} ms`));
    }, timeoutMs);
    s.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) {
        clearTimeout(timer);
        s.destroy();
        reject(new Error('prefill answer too large'));
      } else parts.push(c);
    });
    s.on('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(parts).toString('utf8'));
    });
    s.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** `host:port` to listen on; port 0 picks a free one. */
function listenAddress(text: string): { host: string; port: number } {
  const colon = text.lastIndexOf(':');
  const host = text.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(text.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`listen "${text}": expected host:port`);
  return { host, port };
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
