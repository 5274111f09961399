// Original file: proto/envoy/data/accesslog/v3/accesslog.proto

import type { UInt32Value as _google_protobuf_UInt32Value, UInt32Value__Output as _google_protobuf_UInt32Value__Output } from '../../../../google/protobuf/UInt32Value.js';
import type { Long } from '@grpc/proto-loader';

export interface HTTPResponseProperties {
  'response_code'?: (_google_protobuf_UInt32Value | null);
  'response_body_bytes'?: (number | string | Long);
  'response_code_details'?: (string);
}

export interface HTTPResponseProperties__Output {
  'response_code': (_google_protobuf_UInt32Value__Output | null);
  'response_body_bytes': (string);
  'response_code_details': (string);
}
