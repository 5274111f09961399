// Original file: proto/envoy/service/ext_proc/v3/external_processor.proto

import type { StreamedBodyResponse as _envoy_service_ext_proc_v3_StreamedBodyResponse, StreamedBodyResponse__Output as _envoy_service_ext_proc_v3_StreamedBodyResponse__Output } from './StreamedBodyResponse.js';

export interface BodyMutation {
  'body'?: (Buffer | Uint8Array | string);
  'clear_body'?: (boolean);
  'streamed_response'?: (_envoy_service_ext_proc_v3_StreamedBodyResponse | null);
  'mutation'?: "body"|"clear_body"|"streamed_response";
}

export interface BodyMutation__Output {
  'body'?: (Buffer);
  'clear_body'?: (boolean);
  'streamed_response'?: (_envoy_service_ext_proc_v3_StreamedBodyResponse__Output | null);
  'mutation'?: "body"|"clear_body"|"streamed_response";
}
