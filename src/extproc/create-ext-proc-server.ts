/** Builds the ext_proc server for the configured transport (see ext-proc-server.ts). */
import type { ExtProcServer, ExtProcServerOptions, ExtProcTransport } from './ext-proc-server.js';
import { GrpcJsExtProcServer } from './grpc-js-ext-proc-server.js';
import { NodeHttp2ExtProcServer } from './node-http2-ext-proc-server.js';

export function createExtProcServer(transport: ExtProcTransport, options: ExtProcServerOptions): ExtProcServer {
  return transport === 'grpc-js' ? new GrpcJsExtProcServer(options) : new NodeHttp2ExtProcServer(options);
}
