// Original file: proto/envoy/service/ext_proc/v3/external_processor.proto

import type { HeaderMutation as _envoy_service_ext_proc_v3_HeaderMutation, HeaderMutation__Output as _envoy_service_ext_proc_v3_HeaderMutation__Output } from './HeaderMutation.js';
import type { BodyMutation as _envoy_service_ext_proc_v3_BodyMutation, BodyMutation__Output as _envoy_service_ext_proc_v3_BodyMutation__Output } from './BodyMutation.js';
import type { HeaderMap as _envoy_config_core_v3_HeaderMap, HeaderMap__Output as _envoy_config_core_v3_HeaderMap__Output } from '../../../config/core/v3/HeaderMap.js';

// Original file: proto/envoy/service/ext_proc/v3/external_processor.proto

export const _envoy_service_ext_proc_v3_CommonResponse_ResponseStatus = {
  CONTINUE: 'CONTINUE',
  CONTINUE_AND_REPLACE: 'CONTINUE_AND_REPLACE',
} as const;

export type _envoy_service_ext_proc_v3_CommonResponse_ResponseStatus =
  | 'CONTINUE'
  | 0
  | 'CONTINUE_AND_REPLACE'
  | 1

export type _envoy_service_ext_proc_v3_CommonResponse_ResponseStatus__Output = typeof _envoy_service_ext_proc_v3_CommonResponse_ResponseStatus[keyof typeof _envoy_service_ext_proc_v3_CommonResponse_ResponseStatus]

export interface CommonResponse {
  'status'?: (_envoy_service_ext_proc_v3_CommonResponse_ResponseStatus);
  'header_mutation'?: (_envoy_service_ext_proc_v3_HeaderMutation | null);
  'body_mutation'?: (_envoy_service_ext_proc_v3_BodyMutation | null);
  'trailers'?: (_envoy_config_core_v3_HeaderMap | null);
  'clear_route_cache'?: (boolean);
}

export interface CommonResponse__Output {
  'status': (_envoy_service_ext_proc_v3_CommonResponse_ResponseStatus__Output);
  'header_mutation': (_envoy_service_ext_proc_v3_HeaderMutation__Output | null);
  'body_mutation': (_envoy_service_ext_proc_v3_BodyMutation__Output | null);
  'trailers': (_envoy_config_core_v3_HeaderMap__Output | null);
  'clear_route_cache': (boolean);
}
