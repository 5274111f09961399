/**
 * PROTOTYPE (benchmark only, not the product): the router's ext_proc edge served by a
 * minimal gRPC server written on node:http2 for the single bidirectional Process method,
 * instead of grpc-js. Same config loading, scheduler, telemetry, codec and StreamHandler
 * as `cacheroute serve`; only the transport differs.
 *
 * Why it exists: grpc-js costs about as much CPU per stream as all of the router's own
 * work (a do-nothing grpc-js echo server ≈ 2× the instructions of a bare node:http2 one),
 * so this measures what dropping it would buy before anyone decides to (see
 * docs/extproc.md, "Performance"). It keeps gRPC's wire contract for this method: 5-byte
 * message framing across DATA frames, content-type check, max message size →
 * RESOURCE_EXHAUSTED, compressed flag → UNIMPLEMENTED, grpc-status/grpc-message trailers,
 * stream close without our trailers → the handler's cancel path (ticket finished as
 * aborted). NOT done here: graceful GOAWAY drain on stop, the reset-budget connection
 * recycling, keepalive/ping policy, deadlines (grpc-timeout).
 *
 *   node dist/bench/extproc-load/lean-http2-server.js serve --config router.yaml
 */
import http2 from 'node:http2';
import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { loadConfigFile } from '../../src/config/loader.js';
import { createScheduler } from '../../src/scheduling/create-scheduler.js';
import { extractPrompt } from '../../src/request/extract-prompt.js';
import { EdgeContext } from '../../src/extproc/stream-handler.js';
import type { ProcessStream } from '../../src/extproc/stream-handler.js';
import { AdminServer } from '../../src/admin/admin-server.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { instrumentTelemetry } from '../../src/telemetry/instrument-app.js';
import { extProcServiceDefinition, PROCESS_METHOD_PATH } from '../../src/extproc/ext-proc-proto.js';
import { splitHostPort } from '../../src/extproc/ext-proc-server.js';
import { systemClock } from '../../src/util/clock.js';
import { seededRng } from '../../src/util/rng.js';

const GRPC_OK = 0;
const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_UNIMPLEMENTED = 12;

function trailersOnly(stream: ServerHttp2Stream, code: number, message: string): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURIComponent(message) }, { endStream: true });
}

async function main(): Promise<void> {
  const configPath = process.argv[process.argv.indexOf('--config') + 1];
  if (process.argv[2] !== 'serve' || configPath === undefined) throw new Error('usage: lean-http2-server.js serve --config <file>');
  const config = loadConfigFile(configPath);
  const logger = createLogger({ level: config.telemetry.logLevel });
  const scheduler = createScheduler(config, { clock: systemClock, rng: seededRng(config.seed), logger });
  const admin = new AdminServer({ address: config.server.adminAddress, logger });
  const instrumentation = instrumentTelemetry({})({ config, scheduler, admin, clock: systemClock, logger });
  const edge = new EdgeContext({
    routing: scheduler,
    extract: extractPrompt,
    requests: config.requests,
    decisionHeader: config.telemetry.decisionHeader,
    clock: systemClock,
    logger,
    ...(instrumentation.edgeStats !== undefined ? { stats: instrumentation.edgeStats } : {}),
  });
  const codec = extProcServiceDefinition().Process;
  const maxMessage = config.server.maxReceiveMessageBytes;
  await admin.start();
  scheduler.start();

  const server = http2.createServer({ settings: { maxConcurrentStreams: 2 ** 31 - 1 } });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => {});
    if (headers[':path'] !== PROCESS_METHOD_PATH) return trailersOnly(stream, GRPC_UNIMPLEMENTED, 'unknown method');
    if (!String(headers['content-type'] ?? '').startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    let trailers: Record<string, string> = { 'grpc-status': String(GRPC_OK) };
    let ended = false;
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    const ps: ProcessStream = {
      metadataValue: (key) => {
        const v = headers[key];
        return Array.isArray(v) ? v[0] : v;
      },
      write: (message) => {
        if (ended || stream.destroyed) return;
        const body = codec.responseSerialize(message);
        const frame = Buffer.allocUnsafe(5 + body.length);
        frame[0] = 0;
        frame.writeUInt32BE(body.length, 1);
        body.copy(frame, 5);
        stream.write(frame);
      },
      end: () => {
        if (ended) return;
        ended = true;
        if (!stream.destroyed) stream.end();
      },
      fail: (code, details) => {
        if (ended) return;
        ended = true;
        trailers = { 'grpc-status': String(code), 'grpc-message': encodeURIComponent(details) };
        if (!stream.destroyed) stream.end();
      },
    };
    const handler = edge.open(ps);
    let pending: Buffer | undefined; // an incomplete frame carried to the next DATA chunk
    stream.on('data', (chunk: Buffer) => {
      const buf = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
      pending = undefined;
      let off = 0;
      while (buf.length - off >= 5) {
        const len = buf.readUInt32BE(off + 1);
        if (buf[off] !== 0) return ps.fail(GRPC_UNIMPLEMENTED, 'compressed messages are not supported');
        if (len > maxMessage) return ps.fail(GRPC_RESOURCE_EXHAUSTED, `message of ${len} bytes exceeds ${maxMessage}`);
        if (buf.length - off - 5 < len) break;
        const msg = codec.requestDeserialize(buf.subarray(off + 5, off + 5 + len));
        off += 5 + len;
        handler.onMessage(msg);
      }
      if (off < buf.length) pending = buf.subarray(off);
    });
    stream.on('end', () => handler.onHalfClose());
    stream.on('close', () => handler.onCancel());
  });
  const { host, port } = splitHostPort(config.server.grpcAddress);
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  process.stdout.write(JSON.stringify({ event: 'listening', grpc: `${host}:${bound}`, transport: 'lean-http2 (prototype)' }) + '\n');
  const stop = (): void => {
    server.close();
    scheduler.stop();
    void Promise.resolve(instrumentation.stop?.()).then(() => admin.stop()).then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
