// Original file: proto/envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto


// Original file: proto/envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto

export const _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode = {
  NONE: 'NONE',
  STREAMED: 'STREAMED',
  BUFFERED: 'BUFFERED',
  BUFFERED_PARTIAL: 'BUFFERED_PARTIAL',
  FULL_DUPLEX_STREAMED: 'FULL_DUPLEX_STREAMED',
  GRPC: 'GRPC',
} as const;

export type _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode =
  | 'NONE'
  | 0
  | 'STREAMED'
  | 1
  | 'BUFFERED'
  | 2
  | 'BUFFERED_PARTIAL'
  | 3
  | 'FULL_DUPLEX_STREAMED'
  | 4
  | 'GRPC'
  | 5

export type _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode__Output = typeof _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode[keyof typeof _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode]

// Original file: proto/envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto

export const _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode = {
  DEFAULT: 'DEFAULT',
  SEND: 'SEND',
  SKIP: 'SKIP',
} as const;

export type _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode =
  | 'DEFAULT'
  | 0
  | 'SEND'
  | 1
  | 'SKIP'
  | 2

export type _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode__Output = typeof _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode[keyof typeof _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode]

export interface ProcessingMode {
  'request_header_mode'?: (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode);
  'response_header_mode'?: (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode);
  'request_body_mode'?: (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode);
  'response_body_mode'?: (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode);
  'request_trailer_mode'?: (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode);
  'response_trailer_mode'?: (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode);
}

export interface ProcessingMode__Output {
  'request_header_mode': (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode__Output);
  'response_header_mode': (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode__Output);
  'request_body_mode': (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode__Output);
  'response_body_mode': (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_BodySendMode__Output);
  'request_trailer_mode': (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode__Output);
  'response_trailer_mode': (_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode_HeaderSendMode__Output);
}
