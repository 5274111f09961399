// Original file: proto/envoy/service/ext_proc/v3/external_processor.proto


export interface StreamedBodyResponse {
  'body'?: (Buffer | Uint8Array | string);
  'end_of_stream'?: (boolean);
  'end_of_stream_without_message'?: (boolean);
  'grpc_message_compressed'?: (boolean);
}

export interface StreamedBodyResponse__Output {
  'body': (Buffer);
  'end_of_stream': (boolean);
  'end_of_stream_without_message': (boolean);
  'grpc_message_compressed': (boolean);
}
