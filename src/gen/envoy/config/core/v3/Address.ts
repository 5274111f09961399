// Original file: proto/envoy/config/core/v3/address.proto

import type { SocketAddress as _envoy_config_core_v3_SocketAddress, SocketAddress__Output as _envoy_config_core_v3_SocketAddress__Output } from './SocketAddress.js';

export interface Address {
  'socket_address'?: (_envoy_config_core_v3_SocketAddress | null);
  'address'?: "socket_address";
}

export interface Address__Output {
  'socket_address'?: (_envoy_config_core_v3_SocketAddress__Output | null);
  'address'?: "socket_address";
}
