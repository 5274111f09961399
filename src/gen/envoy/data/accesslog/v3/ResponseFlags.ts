// Original file: proto/envoy/data/accesslog/v3/accesslog.proto


export interface ResponseFlags {
  'failed_local_healthcheck'?: (boolean);
  'no_healthy_upstream'?: (boolean);
  'upstream_request_timeout'?: (boolean);
  'local_reset'?: (boolean);
  'upstream_remote_reset'?: (boolean);
  'upstream_connection_failure'?: (boolean);
  'upstream_connection_termination'?: (boolean);
  'upstream_overflow'?: (boolean);
  'no_route_found'?: (boolean);
  'downstream_connection_termination'?: (boolean);
  'upstream_retry_limit_exceeded'?: (boolean);
  'stream_idle_timeout'?: (boolean);
  'downstream_remote_reset'?: (boolean);
}

export interface ResponseFlags__Output {
  'failed_local_healthcheck': (boolean);
  'no_healthy_upstream': (boolean);
  'upstream_request_timeout': (boolean);
  'local_reset': (boolean);
  'upstream_remote_reset': (boolean);
  'upstream_connection_failure': (boolean);
  'upstream_connection_termination': (boolean);
  'upstream_overflow': (boolean);
  'no_route_found': (boolean);
  'downstream_connection_termination': (boolean);
  'upstream_retry_limit_exceeded': (boolean);
  'stream_idle_timeout': (boolean);
  'downstream_remote_reset': (boolean);
}
