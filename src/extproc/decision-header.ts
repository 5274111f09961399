/**
 * The one-line decision summary carried by the optional `x-cacheroute-decision` response
 * header (config `telemetry.decisionHeader`). Pure, so the edge can call it on the hot path
 * and tests can pin the format. It carries only identifiers the operator configured
 * (endpoint address, strategy) and closed-set labels (reason): never prompt text.
 *
 * Format: `ep=<ip:port>;reason=<reason>;match=<matched>/<total>;strategy=<strategy>`, then for a
 * disaggregation handler's decision `;pd=<why>` and, when prefill was split off,
 * `;prefill=<ip:port>` (`ep` is then the decode engine).
 */
import type { DisaggDecision, RouteDecision } from '../core/types.js';

/** Name of the response header the edge sets when `telemetry.decisionHeader` is on. */
export const DECISION_HEADER = 'x-cacheroute-decision';

// Header-safe token: visible ASCII without the separators this format uses.
function token(value: string): string {
  return value.replace(/[^\x21-\x7e]|[;=,]/g, '_');
}

export function formatDecisionSummary(decision: RouteDecision): string {
  const matched = Math.max(0, Math.trunc(decision.matchedBlocks));
  const total = Math.max(0, Math.trunc(decision.totalBlocks));
  return (
    `ep=${token(decision.endpoint.id)};reason=${token(decision.reason)};` +
    `match=${matched}/${total};strategy=${token(decision.strategy)}` +
    (decision.disagg !== undefined ? pdSummary(decision.disagg) : '')
  );
}

function pdSummary(d: DisaggDecision): string {
  return `;pd=${token(d.why)}` + (d.prefill !== undefined ? `;prefill=${token(d.prefill.id)}` : '');
}

/** Inverse of formatDecisionSummary (tests, tools reading the header). Unknown keys are kept. */
export function parseDecisionSummary(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}
