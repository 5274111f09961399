// Original file: proto/envoy/config/core/v3/base.proto


export interface HeaderValue {
  'key'?: (string);
  'value'?: (string);
  'raw_value'?: (Buffer | Uint8Array | string);
}

export interface HeaderValue__Output {
  'key': (string);
  'value': (string);
  'raw_value': (Buffer);
}
