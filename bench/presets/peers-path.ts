/**
 * `peers-path`: where cache-aware's TTFT gap to the peer routers on the `peers` workload
 * comes from (p50 1.04–1.07× the best peer at every rate, p90/p99 1.2–1.3× at 24 req/s, with
 * the same hit rate and the same per-engine request counts). The peers proxy the request
 * themselves; we add an Envoy hop and, by default, stream every response chunk through the
 * router (FULL_DUPLEX_STREAMED) for exact in-flight accounting and the engine's usage. This
 * runs cache-aware with and without response streaming (`response_body_mode: NONE`) next
 * to sglang-router at a low (4) and the highest (24) rate of the sweep. Opt-in; results in
 * bench/results/peers-path/.
 */
import type { ContenderSpec } from '../contenders/types.js';
import { cacheroute, SGLANG_CACHE_AWARE } from './building-blocks.js';
import { PEERS } from './peers.js';
import type { PresetSpec } from './types.js';

const CONTENDERS: readonly ContenderSpec[] = [
  cacheroute('cache-aware'),
  { kind: 'cacheroute', label: 'cacheroute-cache-aware-respnone', strategy: 'cache-aware', envoyResponseBody: 'NONE' },
  SGLANG_CACHE_AWARE,
];

export const PEERS_PATH: PresetSpec = {
  ...PEERS,
  name: 'peers-path',
  description: 'cache-aware with response bodies streamed through the router (default) and not (response_body_mode NONE) vs sglang-router, on the peers workload at 4 and 24 req/s.',
  estimatedMinutes: 5,
  blocks: [{ ...PEERS.blocks[0]!, name: 'qps-sweep', qpsSweep: [4, 24], contenders: CONTENDERS, contenderMaxQps: {} }],
};
