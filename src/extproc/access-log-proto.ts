/**
 * Loads cacheroute's trimmed gRPC access log service protos (proto/envoy/service/accesslog/,
 * proto/envoy/data/accesslog/) from the same vendored tree and with the same loader options
 * as the ext_proc protos (ext-proc-proto.ts), and names the generated types.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../gen/als.js';
import type { AccessLogServiceClient, AccessLogServiceDefinition } from '../gen/envoy/service/accesslog/v3/AccessLogService.js';
import { LOADER_OPTIONS } from './ext-proc-proto.js';

export type {
  StreamAccessLogsMessage,
  StreamAccessLogsMessage__Output,
} from '../gen/envoy/service/accesslog/v3/StreamAccessLogsMessage.js';
export type { HTTPAccessLogEntry, HTTPAccessLogEntry__Output } from '../gen/envoy/data/accesslog/v3/HTTPAccessLogEntry.js';
export type { AccessLogServiceClient, AccessLogServiceDefinition };

const ENTRY = 'envoy/service/accesslog/v3/als.proto';

let cached: ProtoGrpcType | undefined;

function alsPackage(): ProtoGrpcType {
  if (cached === undefined) {
    cached = grpc.loadPackageDefinition(protoLoader.loadSync(ENTRY, LOADER_OPTIONS)) as unknown as ProtoGrpcType;
  }
  return cached;
}

/** The service definition to register on the router's grpc-js server. */
export function accessLogServiceDefinition(): AccessLogServiceDefinition {
  return alsPackage().envoy.service.accesslog.v3.AccessLogService.service;
}

/** A client (tests) streaming access log entries to `address`. */
export function createAccessLogClient(address: string): AccessLogServiceClient {
  const Ctor = alsPackage().envoy.service.accesslog.v3.AccessLogService;
  return new Ctor(address, grpc.credentials.createInsecure());
}
