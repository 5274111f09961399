/**
 * Loads cacheroute's trimmed ext_proc protos (proto/) at runtime with @grpc/proto-loader
 * (protobufjs underneath: the only protobuf codec) and names the generated types the rest
 * of the edge uses. The loader options here MUST match the flags of
 * `npm run gen:proto` (keepCase, longs String, enums String, defaults, oneofs), otherwise
 * the generated src/gen types would lie about the decoded objects.
 *
 * Note: the google.protobuf well-known types come from protobufjs' bundled definitions,
 * whose field names are camelCase (`structValue`, `stringValue`, `listValue`) even with
 * keepCase; Envoy's own messages keep their snake_case names.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../gen/external_processor.js';
import type { ExternalProcessorClient, ExternalProcessorDefinition } from '../gen/envoy/service/ext_proc/v3/ExternalProcessor.js';

export type { ProcessingRequest, ProcessingRequest__Output } from '../gen/envoy/service/ext_proc/v3/ProcessingRequest.js';
export type { ProcessingResponse, ProcessingResponse__Output } from '../gen/envoy/service/ext_proc/v3/ProcessingResponse.js';
export type { HeaderMap, HeaderMap__Output } from '../gen/envoy/config/core/v3/HeaderMap.js';
export type { HeaderMutation } from '../gen/envoy/service/ext_proc/v3/HeaderMutation.js';
export type { HeaderValueOption } from '../gen/envoy/config/core/v3/HeaderValueOption.js';
export type { Metadata__Output } from '../gen/envoy/config/core/v3/Metadata.js';
export type { Struct, Struct__Output } from '../gen/google/protobuf/Struct.js';
export type { Value, Value__Output } from '../gen/google/protobuf/Value.js';
export type { StatusCode } from '../gen/envoy/type/v3/StatusCode.js';
export type { _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode__Output as BodySendMode } from '../gen/envoy/extensions/filters/http/ext_proc/v3/ProcessingMode.js';
export type { ExternalProcessorClient, ExternalProcessorDefinition };

/** Full gRPC method path Envoy calls. */
export const PROCESS_METHOD_PATH = '/envoy.service.ext_proc.v3.ExternalProcessor/Process';

/** Directory holding proto/envoy/... (repo root /proto; this file runs from dist/src/extproc/). */
export const PROTO_ROOT = fileURLToPath(new URL('../../../proto/', import.meta.url));
const ENTRY = 'envoy/service/ext_proc/v3/external_processor.proto';

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

let cached: ProtoGrpcType | undefined;

/** The loaded package (parsed once per process). */
export function extProcPackage(): ProtoGrpcType {
  if (cached === undefined) {
    const definition = protoLoader.loadSync(ENTRY, LOADER_OPTIONS);
    cached = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  }
  return cached;
}

/**
 * The service definition to register on a grpc-js Server (and the codec tests and the load
 * client encode with): proto-loader's, whose serializers are protobufjs'. The one codec.
 */
export function extProcServiceDefinition(): ExternalProcessorDefinition {
  return extProcPackage().envoy.service.ext_proc.v3.ExternalProcessor.service;
}

/** A client (tests, load generator) talking to an ext_proc server at `address`. */
export function createExtProcClient(address: string, options: grpc.ChannelOptions = {}): ExternalProcessorClient {
  const Ctor = extProcPackage().envoy.service.ext_proc.v3.ExternalProcessor;
  return new Ctor(address, grpc.credentials.createInsecure(), options);
}
