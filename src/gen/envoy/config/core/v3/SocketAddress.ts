// Original file: proto/envoy/config/core/v3/address.proto


export interface SocketAddress {
  'address'?: (string);
  'port_value'?: (number);
  'port_specifier'?: "port_value";
}

export interface SocketAddress__Output {
  'address': (string);
  'port_value'?: (number);
  'port_specifier'?: "port_value";
}
