/**
 * When is the fleet too busy to take a request? An engine is saturated when the work queued
 * ahead of a new prompt's prefill — the router's requests there that have not answered
 * their first byte, raised to the engine's reported waiting queue when fresh — reaches
 * `maxQueuedPerEndpoint`, when its reported KV-cache usage reaches `maxKvUsage`, or when the
 * router's in-flight count reaches `maxInflightPerEndpoint` (if set). The fleet is saturated
 * for a request when every engine eligible for it (model, subset hint) that is healthy is.
 *
 * Why the prefill queue: time to first token is decided by the prompts ahead in prefill; an
 * engine busy decoding can still start a prompt at once. Admitting beyond that only moves
 * the wait from the router (where it is fair, bounded and can be refused with Retry-After)
 * into the engine (where it is FIFO and unbounded).
 *
 * No eligible or no healthy engine is not saturation: routing answers that (NO_ENDPOINT, or
 * the health filter failing open).
 */
import type { RouteRequest } from '../core/types.js';
import { prefillQueue, type LoadSnapshot } from '../endpoints/load.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { AdmissionConfig } from './admission-config.js';

export interface SaturationCheck {
  /** True when every healthy engine eligible for `request` is saturated. */
  saturated(request: RouteRequest, nowMs: number): boolean;
}

export function endpointSaturated(load: LoadSnapshot, cfg: AdmissionConfig['saturation'], maxMetricsAgeMs: number): boolean {
  if (prefillQueue(load, maxMetricsAgeMs) >= cfg.maxQueuedPerEndpoint) return true;
  if (load.kvUsage !== undefined && load.metricsAgeMs <= maxMetricsAgeMs && load.kvUsage >= cfg.maxKvUsage) return true;
  return cfg.maxInflightPerEndpoint > 0 && load.inflightRequests >= cfg.maxInflightPerEndpoint;
}

export class FleetSaturation implements SaturationCheck {
  constructor(
    private readonly registry: EndpointRegistry,
    private readonly cfg: AdmissionConfig['saturation'],
    /** Engine-reported numbers older than this are ignored (engineMetrics.staleAfterMs). */
    private readonly maxMetricsAgeMs: number,
  ) {}

  saturated(request: RouteRequest, nowMs: number): boolean {
    const eligible = this.registry.eligible(request.model, request.subset);
    let healthy = 0;
    for (const ep of eligible) {
      const load = this.registry.loadOf(ep, nowMs);
      if (!load.healthy) continue;
      healthy++;
      if (!endpointSaturated(load, this.cfg, this.maxMetricsAgeMs)) return false;
    }
    return healthy > 0;
  }
}
