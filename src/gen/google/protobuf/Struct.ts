// Original file: null

import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './Value.js';

export interface Struct {
  'fields'?: ({[key: string]: _google_protobuf_Value});
}

export interface Struct__Output {
  'fields': ({[key: string]: _google_protobuf_Value__Output});
}
