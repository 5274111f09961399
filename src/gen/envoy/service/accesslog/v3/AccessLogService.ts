// Original file: proto/envoy/service/accesslog/v3/als.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { StreamAccessLogsMessage as _envoy_service_accesslog_v3_StreamAccessLogsMessage, StreamAccessLogsMessage__Output as _envoy_service_accesslog_v3_StreamAccessLogsMessage__Output } from './StreamAccessLogsMessage.js';
import type { StreamAccessLogsResponse as _envoy_service_accesslog_v3_StreamAccessLogsResponse, StreamAccessLogsResponse__Output as _envoy_service_accesslog_v3_StreamAccessLogsResponse__Output } from './StreamAccessLogsResponse.js';

export interface AccessLogServiceClient extends grpc.Client {
  StreamAccessLogs(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  StreamAccessLogs(metadata: grpc.Metadata, callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  StreamAccessLogs(options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  StreamAccessLogs(callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  streamAccessLogs(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  streamAccessLogs(metadata: grpc.Metadata, callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  streamAccessLogs(options: grpc.CallOptions, callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  streamAccessLogs(callback: grpc.requestCallback<_envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>): grpc.ClientWritableStream<_envoy_service_accesslog_v3_StreamAccessLogsMessage>;
  
}

export interface AccessLogServiceHandlers extends grpc.UntypedServiceImplementation {
  StreamAccessLogs: grpc.handleClientStreamingCall<_envoy_service_accesslog_v3_StreamAccessLogsMessage__Output, _envoy_service_accesslog_v3_StreamAccessLogsResponse>;
  
}

export interface AccessLogServiceDefinition extends grpc.ServiceDefinition {
  StreamAccessLogs: MethodDefinition<_envoy_service_accesslog_v3_StreamAccessLogsMessage, _envoy_service_accesslog_v3_StreamAccessLogsResponse, _envoy_service_accesslog_v3_StreamAccessLogsMessage__Output, _envoy_service_accesslog_v3_StreamAccessLogsResponse__Output>
}
