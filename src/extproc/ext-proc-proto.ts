/**
 * Loads cacheroute's trimmed ext_proc protos (proto/) at runtime with @grpc/proto-loader
 * (protobufjs underneath: the only protobuf codec) and names the generated types the rest
 * of the edge uses.
 *
 * The server's codec is protobufjs', registered with grpc-js as the method's serializers,
 * cheaper than proto-loader's generic pair in two ways that keep every value the same:
 * - responses: `fromObject` + `encode` as proto-loader's, but a frozen response can never
 *   change, so its encoding is kept (by identity, in a WeakMap) and reused. The constant
 *   answers and the memoised decision answers of response-builders.ts are frozen; every
 *   stream shares their bytes instead of encoding the same message again; a response the
 *   builder marked `wireReady` (the body echoes: a Buffer and a flag) skips `fromObject`;
 * - requests: `decode` into protobufjs message instances, whose prototypes carry the proto3
 *   defaults, instead of converting every message into a fresh plain object with every
 *   default filled in (`toObject` with `defaults`). The instances read exactly like the
 *   loader's output (oneof names, nulls for absent messages, '' / false / 0, empty lists)
 *   once two differences are taken out at load time: absent bytes fields default to an
 *   empty Buffer (protobufjs' prototype default is an empty array), and the messages with
 *   an enum field (which the loader turns into names) are converted with protobufjs'
 *   `toObject` and the loader's options — in practice `protocol_config` (sent once per
 *   stream) and the Values of metadata and attribute Structs (a Value can hold a null enum). The loader options here MUST match the flags of
 * `npm run gen:proto` (keepCase, longs String, enums String, defaults, oneofs), otherwise
 * the generated src/gen types would lie about the decoded objects.
 *
 * Note: the google.protobuf well-known types come from protobufjs' bundled definitions,
 * whose field names are camelCase (`structValue`, `stringValue`, `listValue`) even with
 * keepCase; Envoy's own messages keep their snake_case names.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import type { ProtoGrpcType } from '../gen/external_processor.js';
import type { ProcessingResponse } from '../gen/envoy/service/ext_proc/v3/ProcessingResponse.js';
import type { ProcessingRequest__Output } from '../gen/envoy/service/ext_proc/v3/ProcessingRequest.js';
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
let serverDefinition: ExternalProcessorDefinition | undefined;

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
 * client encode with): proto-loader's, whose serializers are protobufjs', with the server's
 * two directions replaced by `deserializeRequest` and `serializeResponse` (see the header).
 */
export function extProcServiceDefinition(): ExternalProcessorDefinition {
  if (serverDefinition === undefined) {
    const base = extProcPackage().envoy.service.ext_proc.v3.ExternalProcessor.service;
    serverDefinition = {
      ...base,
      Process: { ...base.Process, requestDeserialize: deserializeRequest, responseSerialize: serializeResponse },
    };
  }
  return serverDefinition;
}

/**
 * How to bring a decoded message of one type to the loader's shape: `toObject` it whole when
 * it has an enum field of its own, else visit the sub-message fields whose trees hold one.
 */
interface Conversion {
  readonly whole: boolean;
  readonly fields: readonly { readonly name: string; readonly kind: 'single' | 'repeated' | 'map'; readonly type: protobuf.Type }[];
}

interface Codec {
  readonly request: protobuf.Type;
  readonly response: protobuf.Type;
  /** Types whose trees hold an enum (absent: the decoded instance is already in shape). */
  readonly conversions: ReadonlyMap<protobuf.Type, Conversion>;
}

let codec: Codec | undefined;

/** protobufjs' types for the server's codec, loaded with the same include path and keepCase. */
function serverCodec(): Codec {
  if (codec === undefined) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => {
      if (isAbsolute(target)) return target;
      const local = join(PROTO_ROOT, target);
      return existsSync(local) ? local : target;
    };
    root.loadSync(ENTRY, { keepCase: true });
    root.resolveAll();
    const request = root.lookupType('envoy.service.ext_proc.v3.ProcessingRequest');
    codec = { request, response: root.lookupType('envoy.service.ext_proc.v3.ProcessingResponse'), conversions: planConversions(request) };
  }
  return codec;
}

/** Walks the request's type tree: bytes defaults become an empty Buffer; enum holders are planned. */
function planConversions(request: protobuf.Type): Map<protobuf.Type, Conversion> {
  const emptyBytes = Buffer.alloc(0);
  const types: protobuf.Type[] = [];
  const reach = (type: protobuf.Type): void => {
    if (types.includes(type)) return;
    types.push(type);
    for (const field of type.fieldsArray) {
      if (field.type === 'bytes' && !field.repeated && !field.map)
        (type.ctor.prototype as Record<string, unknown>)[field.name] = emptyBytes;
      if (field.resolvedType instanceof protobuf.Type) reach(field.resolvedType);
    }
  };
  reach(request);
  // Which types hold an enum somewhere below: a fixpoint, since Struct and Value are mutually recursive.
  const holds = new Set<protobuf.Type>(types.filter((t) => t.fieldsArray.some((f) => f.resolvedType instanceof protobuf.Enum)));
  for (let grew = true; grew; ) {
    grew = false;
    for (const t of types) {
      if (!holds.has(t) && t.fieldsArray.some((f) => f.resolvedType instanceof protobuf.Type && holds.has(f.resolvedType))) {
        holds.add(t);
        grew = true;
      }
    }
  }
  const plans = new Map<protobuf.Type, Conversion>();
  for (const t of holds) {
    const whole = t.fieldsArray.some((f) => f.resolvedType instanceof protobuf.Enum);
    const fields = t.fieldsArray
      .filter((f) => f.resolvedType instanceof protobuf.Type && holds.has(f.resolvedType))
      .map((f) => ({
        name: f.name,
        kind: f.map ? ('map' as const) : f.repeated ? ('repeated' as const) : ('single' as const),
        type: f.resolvedType as protobuf.Type,
      }));
    plans.set(t, { whole, fields });
  }
  return plans;
}

function toLoaderShape(c: Codec, type: protobuf.Type, message: Record<string, unknown>): Record<string, unknown> {
  const plan = c.conversions.get(type);
  if (plan === undefined) return message;
  if (plan.whole) return type.toObject(message as unknown as protobuf.Message, LOADER_OPTIONS);
  for (const f of plan.fields) {
    const v = message[f.name];
    if (v === null || v === undefined) continue;
    if (f.kind === 'single') {
      message[f.name] = toLoaderShape(c, f.type, v as Record<string, unknown>);
    } else if (f.kind === 'repeated') {
      const list = v as Record<string, unknown>[];
      for (let i = 0; i < list.length; i++) list[i] = toLoaderShape(c, f.type, list[i]!);
    } else {
      const map = v as Record<string, Record<string, unknown>>;
      for (const k of Object.keys(map)) map[k] = toLoaderShape(c, f.type, map[k]!);
    }
  }
  return message;
}

/** Decodes a ProcessingRequest into the shape proto-loader's deserializer returns (see header). */
export function deserializeRequest(bytes: Buffer): ProcessingRequest__Output {
  const c = serverCodec();
  const message = c.request.decode(bytes) as unknown as Record<string, unknown>;
  return toLoaderShape(c, c.request, message) as unknown as ProcessingRequest__Output;
}

const frozenEncodings = new WeakMap<object, Buffer>();
/** Marks a response `wireReady` vouched for (a symbol key: protobufjs never reads it). */
const WIRE_READY = Symbol('cacheroute.wireReady');

/**
 * Vouches that `message` holds wire values only (no enum names, bytes as Buffers), so it is
 * encoded without protobufjs' `fromObject` conversion. For the per-chunk body echoes.
 */
export function wireReady<T extends ProcessingResponse>(message: T): T {
  (message as Record<symbol, unknown>)[WIRE_READY] = true;
  return message;
}

/** Encodes a ProcessingResponse (enum names or numbers, as proto-loader's serializer accepts). */
export function serializeResponse(message: ProcessingResponse): Buffer {
  if ((message as Record<symbol, unknown>)[WIRE_READY] === true) return finish(serverCodec().response.encode(message));
  if (!Object.isFrozen(message)) return encodeResponse(message);
  let bytes = frozenEncodings.get(message);
  if (bytes === undefined) {
    bytes = encodeResponse(message);
    frozenEncodings.set(message, bytes);
  }
  return bytes;
}

function encodeResponse(message: ProcessingResponse): Buffer {
  const type = serverCodec().response;
  return finish(type.encode(type.fromObject(message)));
}

function finish(writer: protobuf.Writer): Buffer {
  const bytes = writer.finish();
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A client (tests, load generator) talking to an ext_proc server at `address`. */
export function createExtProcClient(address: string, options: grpc.ChannelOptions = {}): ExternalProcessorClient {
  const Ctor = extProcPackage().envoy.service.ext_proc.v3.ExternalProcessor;
  return new Ctor(address, grpc.credentials.createInsecure(), options);
}
