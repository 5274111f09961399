// Original file: proto/envoy/service/accesslog/v3/als.proto

import type { HTTPAccessLogEntry as _envoy_data_accesslog_v3_HTTPAccessLogEntry, HTTPAccessLogEntry__Output as _envoy_data_accesslog_v3_HTTPAccessLogEntry__Output } from '../../../data/accesslog/v3/HTTPAccessLogEntry.js';

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries {
  'log_entry'?: (_envoy_data_accesslog_v3_HTTPAccessLogEntry)[];
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries__Output {
  'log_entry': (_envoy_data_accesslog_v3_HTTPAccessLogEntry__Output)[];
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier {
  'log_name'?: (string);
}

export interface _envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier__Output {
  'log_name': (string);
}

export interface StreamAccessLogsMessage {
  'identifier'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier | null);
  'http_logs'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries | null);
  'log_entries'?: "http_logs";
}

export interface StreamAccessLogsMessage__Output {
  'identifier': (_envoy_service_accesslog_v3_StreamAccessLogsMessage_Identifier__Output | null);
  'http_logs'?: (_envoy_service_accesslog_v3_StreamAccessLogsMessage_HTTPAccessLogEntries__Output | null);
  'log_entries'?: "http_logs";
}
