// Original file: proto/envoy/data/accesslog/v3/accesslog.proto

import type { AccessLogCommon as _envoy_data_accesslog_v3_AccessLogCommon, AccessLogCommon__Output as _envoy_data_accesslog_v3_AccessLogCommon__Output } from './AccessLogCommon.js';
import type { HTTPResponseProperties as _envoy_data_accesslog_v3_HTTPResponseProperties, HTTPResponseProperties__Output as _envoy_data_accesslog_v3_HTTPResponseProperties__Output } from './HTTPResponseProperties.js';

export interface HTTPAccessLogEntry {
  'common_properties'?: (_envoy_data_accesslog_v3_AccessLogCommon | null);
  'response'?: (_envoy_data_accesslog_v3_HTTPResponseProperties | null);
}

export interface HTTPAccessLogEntry__Output {
  'common_properties': (_envoy_data_accesslog_v3_AccessLogCommon__Output | null);
  'response': (_envoy_data_accesslog_v3_HTTPResponseProperties__Output | null);
}
