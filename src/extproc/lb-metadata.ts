/**
 * Reading the endpoint-picker metadata Envoy forwards in `metadata_context`:
 * the subset hint (`envoy.lb.subset_hint` / `x-gateway-destination-endpoint-subset`, a
 * list of ip:port or one comma-joined string) that restricts eligible endpoints, and the
 * "served" report (`envoy.lb` / `x-gateway-destination-endpoint-served`) telling which
 * endpoint actually answered after retries.
 */
import type { Metadata__Output, Value__Output } from './ext-proc-proto.js';

export const SUBSET_HINT_NAMESPACE = 'envoy.lb.subset_hint';
export const SUBSET_HINT_KEY = 'x-gateway-destination-endpoint-subset';
export const SERVED_NAMESPACE = 'envoy.lb';
export const SERVED_KEY = 'x-gateway-destination-endpoint-served';

function field(metadata: Metadata__Output | null | undefined, namespace: string, key: string): Value__Output | undefined {
  const ns = metadata?.filter_metadata?.[namespace];
  return ns?.fields?.[key];
}

function splitList(s: string): string[] {
  return s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

/**
 * The subset hint, or undefined when Envoy sent none. An empty array means "present but
 * empty": nothing is eligible (the protocol answers 503).
 */
export function readSubsetHint(metadata: Metadata__Output | null | undefined): string[] | undefined {
  const v = field(metadata, SUBSET_HINT_NAMESPACE, SUBSET_HINT_KEY);
  if (v === undefined) return undefined;
  if (v.listValue) {
    const out: string[] = [];
    for (const item of v.listValue.values ?? []) {
      if (typeof item.stringValue === 'string') out.push(...splitList(item.stringValue));
    }
    return out;
  }
  if (typeof v.stringValue === 'string') return splitList(v.stringValue);
  return [];
}

/** The endpoint that served the request, if Envoy reported it. */
export function readServedEndpoint(metadata: Metadata__Output | null | undefined): string | undefined {
  const v = field(metadata, SERVED_NAMESPACE, SERVED_KEY);
  if (v === undefined || typeof v.stringValue !== 'string') return undefined;
  const first = splitList(v.stringValue)[0];
  return first;
}
