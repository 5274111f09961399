/**
 * A seeded workload run through a scheduler, recording every decision (chosen endpoint,
 * fallbacks, reason, matched/total blocks). Used to check that the shipped presets route
 * exactly as recorded in test/fixtures/decisions/presets.json (captured before the plugin
 * graph became configurable), and that the shorthand and explicit forms of a preset agree.
 */
import { ManualClock } from '../../../../src/util/clock.js';
import { seededRng } from '../../../../src/util/rng.js';
import { createScheduler } from '../../../../src/compose/create-scheduler.js';
import type { RouterConfig } from '../../../../src/config/types.js';
import type { RouteTicket } from '../../../../src/core/routing-service.js';

/** One decision as `chosen>fallback,fallback reason matched/total` (endpoints by index). */
export type TracedDecision = string;

export interface TraceOptions {
  readonly requests: number;
  readonly groups: number;
  readonly seed: number;
  /** Clock step between arrivals (ms). */
  readonly stepMs: number;
  readonly sessions?: boolean;
}

export const DEFAULT_TRACE: TraceOptions = { requests: 300, groups: 10, seed: 7, stepMs: 40 };

function words(rng: { int(n: number): number }, len: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz      ';
  let s = '';
  for (let i = 0; i < len; i++) s += alphabet[rng.int(alphabet.length)];
  return s;
}

export function traceDecisions(config: RouterConfig, opts: TraceOptions = DEFAULT_TRACE): TracedDecision[] {
  const clock = new ManualClock(1_000_000);
  const scheduler = createScheduler(config, { clock, rng: seededRng(config.seed) });
  const wl = seededRng(opts.seed);
  const systems = Array.from({ length: opts.groups }, (_, g) => words(seededRng(1000 + g), 200 + 150 * (g % 5)));
  const history = new Map<number, string>();
  const open: { ticket: RouteTicket; until: number; firstByteAt: number }[] = [];
  const out: TracedDecision[] = [];
  for (let i = 0; i < opts.requests; i++) {
    clock.advance(opts.stepMs);
    const now = clock.nowMs();
    for (let k = open.length - 1; k >= 0; k--) {
      const o = open[k]!;
      if (o.firstByteAt <= now) o.ticket.firstByte?.();
      if (o.until <= now) {
        const promptTokens = o.ticket.request.promptTokens;
        const cached = Math.min(promptTokens, Math.floor((o.ticket.decision.matchedBlocks * 64) / 4));
        o.ticket.finish({ status: 200, aborted: false, promptTokens, cachedTokens: cached, completionTokens: 50 + wl.int(200) });
        open.splice(k, 1);
      }
    }
    // Zipf-ish group choice: lower groups are hotter.
    const g = Math.min(opts.groups - 1, Math.floor(wl.next() ** 2 * opts.groups));
    const turn = (history.get(g) ?? systems[g]!) + words(wl, 40 + wl.int(400));
    history.set(g, turn.length > 6000 ? systems[g]! : turn);
    const prefix = wl.int(10) === 0 ? words(wl, 100 + wl.int(800)) : turn;
    const request = {
      requestId: `t-${i}`,
      model: 'm',
      prefix,
      promptChars: prefix.length,
      promptTokens: Math.ceil(prefix.length / 4),
      stream: true,
      arrivalMs: now,
      // The session key arrives in the header the session scorer names (as through the edge).
      ...(opts.sessions === true && wl.int(2) === 0 ? { headers: new Map([['x-session', `s-${g}`]]) } : {}),
    };
    const ticket = scheduler.route(request);
    const d = ticket.decision;
    out.push(`${d.endpoint.index}>${d.fallbacks.map((e) => e.index).join(',')} ${d.reason} ${d.matchedBlocks}/${d.totalBlocks}`);
    const life = 100 + wl.int(1500);
    open.push({ ticket, until: now + life, firstByteAt: now + Math.floor(life / 4) });
  }
  scheduler.stop();
  return out;
}
