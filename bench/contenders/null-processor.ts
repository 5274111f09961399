/**
 * A do-nothing ext_proc processor: the reference for what the ext_proc hop itself costs, apart
 * from anything cacheroute decides. It speaks the same exchange as cacheroute under the shipped
 * Envoy config, on the same server library and codec (@grpc/grpc-js, the router's
 * ext-proc-proto.ts): the request headers' answer is held until the FULL_DUPLEX_STREAMED body
 * has ended, then one message carries the destination (header and `envoy.lb` metadata, always
 * the config's first endpoint), the body goes back in one message and the stream ends OK. No
 * prompt is read, nothing is scored, nothing runs in the background.
 *
 *   node dist/bench/contenders/null-processor.js serve --config ROUTER.yaml
 *
 * It reads `server.grpcAddress` and `endpoints[0].address` of a router config (the harness
 * starts it where it would start the router; `routerMain` of a cacheroute contender) and
 * prints `{"msg":"listening"}` when bound. Not part of the product: a benchmark control.
 */
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { parse } from 'yaml';
import { extProcServiceDefinition } from '../../src/extproc/ext-proc-proto.js';
import type { ProcessingRequest__Output, ProcessingResponse } from '../../src/extproc/ext-proc-proto.js';
import { requestHeadersWithDecision, streamedRequestBody } from '../../src/extproc/response-builders.js';
import type { RouteDecision } from '../../src/core/types.js';

interface NullConfig {
  readonly grpcAddress: string;
  readonly endpoint: string;
}

/** The two facts the processor needs from a router config file. */
export function readNullConfig(text: string): NullConfig {
  const doc = parse(text) as { server?: { grpcAddress?: unknown }; endpoints?: { address?: unknown }[] } | null;
  const grpcAddress = doc?.server?.grpcAddress;
  const endpoint = doc?.endpoints?.[0]?.address;
  if (typeof grpcAddress !== 'string' || typeof endpoint !== 'string') {
    throw new Error('null processor: the config needs server.grpcAddress and endpoints[0].address');
  }
  return { grpcAddress, endpoint };
}

/**
 * One Process stream: collects the body, then answers headers + body and ends. Anything but a
 * request's headers and FULL_DUPLEX_STREAMED body (other modes, responses) is outside this
 * control's job: the stream ends with FAILED_PRECONDITION.
 */
export function nullProcess(call: grpc.ServerDuplexStream<ProcessingRequest__Output, ProcessingResponse>, decision: RouteDecision): void {
  const chunks: Buffer[] = [];
  let done = false;
  call.on('data', (msg: ProcessingRequest__Output) => {
    if (done) return;
    if (msg.request === 'request_headers' && !msg.request_headers!.end_of_stream) return;
    if (msg.request === 'request_body') {
      chunks.push(msg.request_body!.body);
      if (!msg.request_body!.end_of_stream) return;
      done = true;
      call.write(requestHeadersWithDecision(decision));
      call.write(streamedRequestBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), true));
      call.end();
      return;
    }
    done = true;
    call.emit('error', { code: grpc.status.FAILED_PRECONDITION, details: `null processor: unexpected ${msg.request ?? 'message'}` });
  });
  call.on('end', () => {
    if (!done) call.end();
  });
  call.on('error', () => undefined);
}

/** Serves the null processor at `cfg.grpcAddress` (port 0: a free one); resolves with the bound port. */
export async function startNullProcessor(cfg: NullConfig): Promise<{ readonly port: number; stop(): Promise<void> }> {
  // Stands in for a router's decision: only the destination list is read (destinationList).
  const decision = { endpoint: { id: cfg.endpoint }, fallbacks: [] } as unknown as RouteDecision;
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 64 << 20 });
  server.addService(extProcServiceDefinition(), {
    Process: (call: grpc.ServerDuplexStream<ProcessingRequest__Output, ProcessingResponse>) => nullProcess(call, decision),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(cfg.grpcAddress, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { port, stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) };
}

async function main(): Promise<void> {
  const i = process.argv.indexOf('--config');
  if (process.argv[2] !== 'serve' || i < 0 || i + 1 >= process.argv.length) {
    throw new Error('usage: null-processor serve --config ROUTER.yaml');
  }
  const cfg = readNullConfig(readFileSync(process.argv[i + 1]!, 'utf8'));
  const server = await startNullProcessor(cfg);
  console.log(JSON.stringify({ msg: 'listening', address: cfg.grpcAddress, port: server.port }));
  const stop = (): void => void server.stop().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  });
}
