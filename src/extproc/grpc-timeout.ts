/**
 * Parses the gRPC `grpc-timeout` request header: at most 8 ASCII digits followed by one
 * unit, H (hours), M (minutes), S (seconds), m (milliseconds), u (microseconds) or
 * n (nanoseconds). Returns milliseconds (sub-millisecond values round up to 1, so a
 * deadline is never "now"), or undefined when the header is absent; throws on a malformed
 * value, which the transport answers with INTERNAL as gRPC servers do.
 */

const UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

export function parseGrpcTimeoutMs(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(header);
  if (m === null) throw new Error(`malformed grpc-timeout ${JSON.stringify(header.slice(0, 32))}`);
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms === 0 ? 0 : Math.max(1, Math.ceil(ms));
}
