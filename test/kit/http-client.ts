/**
 * Minimal HTTP/1.1 client for e2e tests, the demo and benchmarks: keeps the raw status,
 * headers and the body as the chunks that arrived (so SSE streams can be compared), and
 * measures time to first body byte. Every request is bounded by a timeout.
 */
import { Agent, request as httpRequestRaw, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

export interface HttpResult {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Body chunks in arrival order. */
  readonly chunks: readonly Buffer[];
  readonly body: Buffer;
  /** ms from sending the request to the first body byte (or to the headers if no body). */
  readonly firstByteMs: number;
  readonly totalMs: number;
  text(): string;
  /** Parses the body as JSON (throws if it is not). */
  json(): unknown;
  /** First value of a response header. */
  header(name: string): string | undefined;
}

export interface HttpRequestOptions {
  readonly method?: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: string | Buffer;
  /** Whole-request bound; default 30 s. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  readonly agent?: Agent;
  /** Called for every body chunk as it arrives, with ms since the request was sent. */
  readonly onChunk?: (chunk: Buffer, elapsedMs: number) => void;
}

/** A shared keep-alive agent with room for the concurrency tests and benchmarks use. */
export const sharedAgent = new Agent({ keepAlive: true, maxSockets: 256 });

export function httpRequest(url: string, opts: HttpRequestOptions = {}): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const headers: OutgoingHttpHeaders = { ...opts.headers };
    if (opts.body !== undefined && headers['content-length'] === undefined) {
      headers['content-length'] = Buffer.byteLength(opts.body);
    }
    const req = httpRequestRaw(url, {
      method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
      headers,
      agent: opts.agent ?? sharedAgent,
      signal: opts.signal,
    });
    const timer = setTimeout(
      () => req.destroy(new Error(`timeout after ${opts.timeoutMs ?? 30_000} ms: ${url}`)),
      opts.timeoutMs ?? 30_000,
    );
    req.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let firstByteMs: number | undefined;
      res.on('data', (c: Buffer) => {
        const elapsed = performance.now() - started;
        if (firstByteMs === undefined) firstByteMs = elapsed;
        chunks.push(c);
        opts.onChunk?.(c, elapsed);
      });
      res.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      res.once('end', () => {
        clearTimeout(timer);
        const totalMs = performance.now() - started;
        const body = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          chunks,
          body,
          firstByteMs: firstByteMs ?? totalMs,
          totalMs,
          text: () => body.toString('utf8'),
          json: () => JSON.parse(body.toString('utf8')) as unknown,
          header: (name) => {
            const v = res.headers[name.toLowerCase()];
            return Array.isArray(v) ? v[0] : v;
          },
        });
      });
    });
    if (opts.body !== undefined) req.end(opts.body);
    else req.end();
  });
}

/** POSTs a JSON document. */
export function postJson(url: string, doc: unknown, opts: Omit<HttpRequestOptions, 'body' | 'method'> = {}): Promise<HttpResult> {
  return httpRequest(url, {
    ...opts,
    method: 'POST',
    body: JSON.stringify(doc),
    headers: { 'content-type': 'application/json', ...opts.headers },
  });
}

/** True when GET `url` answers with a 2xx status within `timeoutMs` (never throws). */
export async function isHttpOk(url: string, timeoutMs = 1000): Promise<boolean> {
  try {
    const res = await httpRequest(url, { timeoutMs, agent: new Agent({ keepAlive: false }) });
    return res.status >= 200 && res.status < 300;
  } catch {
    return false;
  }
}
