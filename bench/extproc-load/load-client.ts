/**
 * The ext_proc load generator: N concurrent streams over a few HTTP/2 connections, each
 * playing what Envoy sends for one FULL_DUPLEX_STREAMED chat request — request headers,
 * one body chunk with end_of_stream, response headers — then ending the stream the way
 * Envoy does: a reset (RST_STREAM, Envoy's default) or a half-close (Envoy's opt-in
 * `ext_proc_graceful_grpc_close`).
 *
 * Why raw node:http2 instead of a grpc-js client: on a two-core machine the client shares
 * the box with the server, and a grpc-js client spends about as much CPU per stream as the
 * server under test, capping what can be measured. Here gRPC framing is done by hand
 * (5-byte prefix + pre-encoded protobuf) and answers are counted, not decoded, like a lean
 * C++ proxy would. It follows GOAWAY (opens a fresh connection for new streams), as Envoy
 * does. Bounded by a deadline and a per-stream timeout; latencies are kept in a fixed-size array.
 */
import http2 from 'node:http2';
import { extProcServiceDefinition, PROCESS_METHOD_PATH } from '../../src/extproc/ext-proc-proto.js';
import type { ProcessingRequest, ProcessingResponse__Output } from '../../src/extproc/ext-proc-proto.js';

export type CloseMode = 'reset' | 'half-close';

export interface LoadOptions {
  /** `host:port` of the ext_proc server. */
  readonly address: string;
  readonly concurrency: number;
  readonly connections: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  readonly bodies: readonly Buffer[];
  /** How each stream ends after its last answer (default 'reset', Envoy's default). */
  readonly close?: CloseMode;
  /** Upper bound on recorded latencies (memory bound). */
  readonly maxSamples?: number;
  /** A stream not finished after this long is abandoned (reset) and counted as an error. Default 10 s. */
  readonly streamTimeoutMs?: number;
  /**
   * Stop opening streams after this many (warm-up included), for fixed-work runs such as
   * instruction counting under callgrind; the duration still bounds the run.
   */
  readonly maxStreams?: number;
}

export interface LoadResult {
  readonly streams: number;
  readonly errors: number;
  /**
   * Of the errors: streams refused (REFUSED_STREAM) before any answer, as at a connection
   * retirement (connection-recycler.ts). They were never processed; Envoy's refused-stream
   * retry (our configs' ext_proc grpc_service.retry_policy) re-sends them, this client does not.
   */
  readonly refused: number;
  readonly seconds: number;
  readonly streamsPerSecond: number;
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number; readonly mean: number };
  /** Connections opened (more than `connections` when the server retired some). */
  readonly connectionsOpened: number;
  readonly errorSamples: readonly string[];
}

function headerMap(h: Record<string, string>) {
  return { headers: Object.entries(h).map(([key, v]) => ({ key, raw_value: Buffer.from(v) })) };
}

/** gRPC length-prefixed message framing (uncompressed). */
function frame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out.writeUInt8(0, 0);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

export interface EncodedMessages {
  readonly headers: Buffer[];
  readonly bodies: Buffer[];
  readonly responseHeaders: Buffer;
}

/** Pre-encoded (protobuf only, not framed) messages of one stream per body. */
export function encodedMessages(bodies: readonly Buffer[]): EncodedMessages {
  const ser = extProcServiceDefinition().Process.requestSerialize;
  const enc = (m: ProcessingRequest): Buffer => ser(m);
  return {
    headers: bodies.map((b, i) =>
      enc({
        request_headers: {
          headers: headerMap({
            ':method': 'POST',
            ':path': '/v1/chat/completions',
            ':authority': 'gateway',
            ':scheme': 'http',
            'content-type': 'application/json',
            'content-length': String(b.length),
            'x-request-id': `load-${i}`,
          }),
        },
        protocol_config: { request_body_mode: 'FULL_DUPLEX_STREAMED', response_body_mode: 'NONE' },
      }),
    ),
    bodies: bodies.map((b) => enc({ request_body: { body: b, end_of_stream: true } })),
    responseHeaders: enc({ response_headers: { headers: headerMap({ ':status': '200', 'content-type': 'text/event-stream' }) } }),
  };
}

const REQUEST_HEADERS = {
  ':method': 'POST',
  ':path': PROCESS_METHOD_PATH,
  ':scheme': 'http',
  'content-type': 'application/grpc',
  te: 'trailers',
};

/** One logical connection that reconnects after GOAWAY/close, like an Envoy connection pool. */
class Connection {
  private session: http2.ClientHttp2Session | undefined;
  opened = 0;

  constructor(private readonly authority: string) {}

  get(): http2.ClientHttp2Session {
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return s;
    const fresh = http2.connect(this.authority, { settings: { initialWindowSize: 16 * 1024 * 1024 } });
    this.opened++;
    fresh.on('error', () => {});
    fresh.on('goaway', () => {
      if (this.session === fresh) this.session = undefined;
    });
    fresh.on('close', () => {
      if (this.session === fresh) this.session = undefined;
    });
    this.session = fresh;
    return fresh;
  }

  close(): void {
    this.session?.close();
  }
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const msgs = encodedMessages(opts.bodies);
  const framed = { headers: msgs.headers.map(frame), bodies: msgs.bodies.map(frame), responseHeaders: frame(msgs.responseHeaders) };
  const mode = opts.close ?? 'reset';
  const conns = Array.from({ length: opts.connections }, () => new Connection(`http://${opts.address}`));
  const maxSamples = opts.maxSamples ?? 2_000_000;
  const maxStreams = opts.maxStreams ?? Number.POSITIVE_INFINITY;
  const samples = new Float64Array(maxSamples);
  let sampleCount = 0;
  let streams = 0;
  let errors = 0;
  let refused = 0;
  const errorSamples: string[] = [];
  let seq = 0;
  const measureStart = performance.now() + opts.warmupMs;
  const end = measureStart + opts.durationMs;

  const one = (conn: Connection): Promise<void> =>
    new Promise((resolve) => {
      const i = seq++ % framed.headers.length;
      const start = performance.now();
      let answers = 0;
      let pending = 0; // bytes still missing of the current gRPC message
      let header = 0; // prefix bytes seen of the current message
      let done = false;
      let ok = false;
      let halfClosed = false;
      const watchdog = setTimeout(() => {
        ok = false;
        finish(`timed out after ${answers} answers${halfClosed ? ', half-closed' : ''}`);
        req.close(http2.constants.NGHTTP2_CANCEL);
      }, opts.streamTimeoutMs ?? 10_000);
      const finish = (why?: string, wasRefused = false): void => {
        if (done) return;
        done = true;
        clearTimeout(watchdog);
        const now = performance.now();
        if (now >= measureStart && now <= end) {
          if (ok) {
            streams++;
            if (sampleCount < maxSamples) samples[sampleCount++] = now - start;
          } else {
            errors++;
            if (wasRefused) refused++;
            if (why !== undefined && errorSamples.length < 5) errorSamples.push(why);
          }
        }
        resolve();
      };
      let req: http2.ClientHttp2Stream;
      try {
        req = conn.get().request(REQUEST_HEADERS, { endStream: false });
      } catch (err) {
        finish(`request: ${(err as Error).message}`);
        return;
      }
      const onMessage = (): void => {
        answers++;
        if (answers === 2) req.write(framed.responseHeaders);
        else if (answers === 3) {
          ok = true;
          if (mode === 'reset') {
            req.close(http2.constants.NGHTTP2_CANCEL);
            finish();
          } else {
            halfClosed = true;
            req.end();
          }
        }
      };
      req.on('data', (chunk: Buffer) => {
        // Count length-prefixed gRPC messages across chunk boundaries.
        let off = 0;
        while (off < chunk.length) {
          if (pending > 0) {
            const take = Math.min(pending, chunk.length - off);
            pending -= take;
            off += take;
            if (pending === 0) onMessage();
            continue;
          }
          // Reading the 5-byte prefix (flag + 4-byte length).
          const need = 5 - header;
          const take = Math.min(need, chunk.length - off);
          for (let k = 0; k < take; k++) {
            const byte = chunk[off + k]!;
            if (header + k >= 1) pending = pending * 256 + byte;
          }
          header += take;
          off += take;
          if (header === 5) {
            header = 0;
            if (pending === 0) onMessage();
          }
        }
      });
      req.on('trailers', (t: http2.IncomingHttpHeaders) => {
        const status = t['grpc-status'];
        // A router on access-log completion ends the stream with OK once the request side is
        // answered (2 answers): nothing more is exchanged, so that is a complete stream.
        if (status === '0' && answers >= 2 && !ok) {
          ok = true;
          req.end();
        }
        if (status !== undefined && status !== '0') {
          ok = false;
          finish(`grpc-status ${String(status)} ${String(t['grpc-message'] ?? '')} after ${answers} answers`);
        }
      });
      req.on('close', () => {
        if (!ok)
          finish(
            `stream closed (rst ${req.rstCode}) after ${answers} answers`,
            req.rstCode === http2.constants.NGHTTP2_REFUSED_STREAM && answers === 0,
          );
        else finish();
      });
      req.on('error', () => {});
      req.write(framed.headers[i]!);
      req.write(framed.bodies[i]!);
    });

  const worker = async (w: number): Promise<void> => {
    const conn = conns[w % conns.length]!;
    while (performance.now() < end && seq < maxStreams) await one(conn);
  };
  await Promise.all(Array.from({ length: opts.concurrency }, (_, w) => worker(w)));
  const seconds = opts.durationMs / 1000;
  for (const c of conns) c.close();

  const sorted = samples.slice(0, sampleCount).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    streams,
    errors,
    refused,
    seconds,
    streamsPerSecond: streams / seconds,
    latencyMs: {
      p50: percentile(sorted, 0.5),
      p90: percentile(sorted, 0.9),
      p99: percentile(sorted, 0.99),
      max: sorted.length ? sorted[sorted.length - 1]! : 0,
      mean: sorted.length ? sum / sorted.length : 0,
    },
    connectionsOpened: conns.reduce((a, c) => a + c.opened, 0),
    errorSamples,
  };
}

/** One fully decoded stream (grpc-js client), to check the server really routes before measuring. */
export async function verifyOnce(address: string, body: Buffer): Promise<string> {
  const { createExtProcClient } = await import('../../src/extproc/ext-proc-proto.js');
  const msgs = encodedMessages([body]);
  const def = extProcServiceDefinition().Process;
  const client = createExtProcClient(address);
  try {
    return await new Promise<string>((resolve, reject) => {
      const call = client.Process();
      call.on('data', (m: ProcessingResponse__Output) => {
        const dest = m.request_headers?.response?.header_mutation?.set_headers.find(
          (o) => o.header?.key === 'x-gateway-destination-endpoint',
        );
        if (dest) {
          call.cancel();
          resolve(dest.header!.raw_value.toString());
        } else if (m.immediate_response) {
          call.cancel();
          reject(new Error(`server answered ${m.immediate_response.status?.code}: ${m.immediate_response.body.toString()}`));
        }
      });
      call.on('error', (e: Error) => reject(e));
      call.write(def.requestDeserialize(msgs.headers[0]!) as ProcessingRequest);
      call.write(def.requestDeserialize(msgs.bodies[0]!) as ProcessingRequest);
    });
  } finally {
    client.close();
  }
}
