// Original file: proto/envoy/data/accesslog/v3/accesslog.proto

import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../../../google/protobuf/Duration.js';
import type { Address as _envoy_config_core_v3_Address, Address__Output as _envoy_config_core_v3_Address__Output } from '../../../config/core/v3/Address.js';
import type { ResponseFlags as _envoy_data_accesslog_v3_ResponseFlags, ResponseFlags__Output as _envoy_data_accesslog_v3_ResponseFlags__Output } from './ResponseFlags.js';
import type { Metadata as _envoy_config_core_v3_Metadata, Metadata__Output as _envoy_config_core_v3_Metadata__Output } from '../../../config/core/v3/Metadata.js';
import type { AccessLogType as _envoy_data_accesslog_v3_AccessLogType, AccessLogType__Output as _envoy_data_accesslog_v3_AccessLogType__Output } from './AccessLogType.js';

export interface AccessLogCommon {
  'time_to_first_upstream_rx_byte'?: (_google_protobuf_Duration | null);
  'time_to_last_upstream_rx_byte'?: (_google_protobuf_Duration | null);
  'upstream_remote_address'?: (_envoy_config_core_v3_Address | null);
  'upstream_cluster'?: (string);
  'response_flags'?: (_envoy_data_accesslog_v3_ResponseFlags | null);
  'metadata'?: (_envoy_config_core_v3_Metadata | null);
  'custom_tags'?: ({[key: string]: string});
  'duration'?: (_google_protobuf_Duration | null);
  'upstream_request_attempt_count'?: (number);
  'access_log_type'?: (_envoy_data_accesslog_v3_AccessLogType);
}

export interface AccessLogCommon__Output {
  'time_to_first_upstream_rx_byte': (_google_protobuf_Duration__Output | null);
  'time_to_last_upstream_rx_byte': (_google_protobuf_Duration__Output | null);
  'upstream_remote_address': (_envoy_config_core_v3_Address__Output | null);
  'upstream_cluster': (string);
  'response_flags': (_envoy_data_accesslog_v3_ResponseFlags__Output | null);
  'metadata': (_envoy_config_core_v3_Metadata__Output | null);
  'custom_tags': ({[key: string]: string});
  'duration': (_google_protobuf_Duration__Output | null);
  'upstream_request_attempt_count': (number);
  'access_log_type': (_envoy_data_accesslog_v3_AccessLogType__Output);
}
