// Original file: proto/envoy/service/ext_proc/v3/external_processor.proto

import type { HeaderValueOption as _envoy_config_core_v3_HeaderValueOption, HeaderValueOption__Output as _envoy_config_core_v3_HeaderValueOption__Output } from '../../../config/core/v3/HeaderValueOption.js';

export interface HeaderMutation {
  'set_headers'?: (_envoy_config_core_v3_HeaderValueOption)[];
  'remove_headers'?: (string)[];
}

export interface HeaderMutation__Output {
  'set_headers': (_envoy_config_core_v3_HeaderValueOption__Output)[];
  'remove_headers': (string)[];
}
