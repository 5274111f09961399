/** `server:` section: listen addresses and gRPC limits. */
import type { ServerConfig } from '../types.js';
import { int, type ObjectReader } from '../field-reader.js';
import {
  DEFAULT_ADMIN_ADDRESS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_GRPC_ADDRESS,
  DEFAULT_KEEPALIVE_TIME_MS,
  DEFAULT_KEEPALIVE_TIMEOUT_MS,
  DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
  GRPC_FRAMING_HEADROOM_BYTES,
} from '../defaults.js';
import { listenAddress } from './common-checks.js';

/** @param maxBodyBytes from `requests`, so the gRPC limit can default to fit it. */
export function parseServer(r: ObjectReader, maxBodyBytes: number): ServerConfig {
  const grpcAddress = r.get('grpcAddress', listenAddress, DEFAULT_GRPC_ADDRESS);
  const adminAddress = r.get('adminAddress', listenAddress, DEFAULT_ADMIN_ADDRESS);
  const drainTimeoutMs = r.get('drainTimeoutMs', int({ min: 0, max: 600_000 }), DEFAULT_DRAIN_TIMEOUT_MS);
  const fitted = Math.max(DEFAULT_MAX_RECEIVE_MESSAGE_BYTES, maxBodyBytes + GRPC_FRAMING_HEADROOM_BYTES);
  const maxReceiveMessageBytes = r.get('maxReceiveMessageBytes', int({ min: 1024, max: 2 ** 31 - 1 }), fitted);
  if (r.has('maxReceiveMessageBytes') && maxReceiveMessageBytes <= maxBodyBytes) {
    r.report('maxReceiveMessageBytes', `must exceed requests.maxBodyBytes (${maxBodyBytes}) or large bodies fail in gRPC`);
  }
  const grpcPort = grpcAddress.slice(grpcAddress.lastIndexOf(':') + 1);
  if (grpcAddress === adminAddress && grpcPort !== '0') {
    r.report('adminAddress', `must differ from server.grpcAddress (${grpcAddress})`);
  }
  const keepaliveTimeMs = r.get('keepaliveTimeMs', int({ min: 0, max: 24 * 60 * 60 * 1000 }), DEFAULT_KEEPALIVE_TIME_MS);
  const keepaliveTimeoutMs = r.get('keepaliveTimeoutMs', int({ min: 1, max: 10 * 60 * 1000 }), DEFAULT_KEEPALIVE_TIMEOUT_MS);
  if (keepaliveTimeMs > 0 && keepaliveTimeMs < 1000) r.report('keepaliveTimeMs', 'must be 0 (off) or at least 1000 ms');
  r.done();
  return { grpcAddress, adminAddress, drainTimeoutMs, maxReceiveMessageBytes, keepaliveTimeMs, keepaliveTimeoutMs };
}
