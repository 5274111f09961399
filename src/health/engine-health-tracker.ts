/**
 * Per-engine health verdict from two kinds of evidence, as Envoy combines active health
 * checking with outlier detection:
 *
 *  - Active checks (the engine's /health): `unhealthyThreshold` consecutive failures mark it
 *    down, `healthyThreshold` consecutive successes mark it up again. A refused connection
 *    counts as down at once: nothing listens on the port, the process is gone.
 *  - Passive outlier detection (connect failures and 5xx seen on the response path, scrape
 *    failures): `consecutiveFailures` in a row eject the engine for
 *    base × 2^(ejections−1), capped at `maxEjectionMs`. When the ejection ends the engine is
 *    half-open: it gets traffic again, one success closes it, one failure ejects it again
 *    with the next, longer backoff. The backoff resets after `maxEjectionMs` without an
 *    ejection.
 *
 * Routable = up by active checks AND not ejected. An active check that passes after the
 * engine had failed active checks during its ejection ends the ejection early (new evidence:
 * it went away and came back); checks that passed all along do not shorten it, otherwise a
 * /health that says OK while inference fails would defeat the backoff.
 *
 * An engine that comes back after refused connections restarted (a new process on the port),
 * so the tracker reports it through `onRestart` — its KV cache is empty.
 *
 * Pure state, no timers: the caller feeds results with the time they were observed.
 */
import type { Clock } from '../util/clock.js';

export type HealthEvidence = 'active' | 'connect-failure' | 'http-5xx' | 'scrape';
/**
 * Passive evidence comes in two classes counted apart: a scrape that works says nothing
 * about inference answering 5xx, and the other way round.
 */
export type EvidenceClass = 'response' | 'scrape';

function classOf(e: Exclude<HealthEvidence, 'active'>): EvidenceClass {
  return e === 'scrape' ? 'scrape' : 'response';
}
export type ActiveResult = 'ok' | 'refused' | 'timeout' | 'error' | 'bad-status';

export interface EngineHealthOptions {
  readonly clock: Clock;
  readonly unhealthyThreshold: number;
  readonly healthyThreshold: number;
  readonly consecutiveFailures: number;
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
  /** An engine went from routable to not routable (reason: the evidence that did it). */
  readonly onDown?: (id: string, reason: HealthEvidence, detail: string) => void;
  /** An engine became routable again. */
  readonly onUp?: (id: string, how: 'active-check' | 'half-open') => void;
  /** An engine came back after refused connections: a new process. */
  readonly onRestart?: (id: string, reason: string) => void;
}

export interface EngineHealthView {
  readonly endpointId: string;
  readonly routable: boolean;
  readonly activeUp: boolean;
  /** Remaining ejection in ms (0 when not ejected). */
  readonly ejectedForMs: number;
  readonly halfOpen: boolean;
  readonly ejections: number;
  readonly consecutivePassiveFailures: number;
  readonly lastReason?: string;
}

interface State {
  activeUp: boolean;
  activeFails: number;
  activeOks: number;
  /** Active checks failed since the current ejection began (or while down). */
  activeFailedDuringEjection: boolean;
  /** The engine's last active failure was a refused connection. */
  refusedWhileDown: boolean;
  passiveFails: Record<EvidenceClass, number>;
  /** The class whose failures caused the current ejection (its success closes half-open). */
  ejectedBy: EvidenceClass;
  ejectedUntilMs: number;
  halfOpen: boolean;
  ejections: number;
  lastEjectedAtMs: number;
  lastReason?: string;
  wasRoutable: boolean;
}

export class EngineHealthTracker {
  private readonly states = new Map<string, State>();

  constructor(private readonly opts: EngineHealthOptions) {}

  /** May the router send new requests to `id` now? Unknown engines are routable. */
  isRoutable(id: string, nowMs: number = this.opts.clock.nowMs()): boolean {
    const s = this.states.get(id);
    if (s === undefined) return true;
    return this.routable(s, nowMs);
  }

  /** Up by active checks with no failed check since the last good one (unknown engines too). */
  activeSettled(id: string): boolean {
    const s = this.states.get(id);
    return s === undefined || (s.activeUp && s.activeFails === 0);
  }

  /** One active check result. */
  recordActive(id: string, result: ActiveResult, detail = ''): void {
    const now = this.opts.clock.nowMs();
    const s = this.state(id);
    this.transition(id, s, now, 'active', 'half-open'); // report an ejection that ended meanwhile
    if (result === 'ok') {
      s.activeFails = 0;
      s.activeOks++;
      const cameBack = !s.activeUp && s.activeOks >= this.opts.healthyThreshold;
      if (cameBack) {
        s.activeUp = true;
        if (s.refusedWhileDown) this.opts.onRestart?.(id, 'came back after refused connections');
        s.refusedWhileDown = false;
      }
      if (s.ejectedUntilMs > 0 && s.activeFailedDuringEjection && s.activeUp) {
        // It was seen gone and is back: end the ejection now.
        s.ejectedUntilMs = 0;
        s.halfOpen = false;
        s.passiveFails.response = 0;
        s.passiveFails.scrape = 0;
      }
      if (s.activeUp) s.activeFailedDuringEjection = false;
    } else {
      s.activeOks = 0;
      s.activeFails++;
      s.activeFailedDuringEjection = true;
      if (result === 'refused') s.refusedWhileDown = true;
      if (s.activeUp && (result === 'refused' || s.activeFails >= this.opts.unhealthyThreshold)) {
        s.activeUp = false;
        s.lastReason = `active check: ${result}${detail !== '' ? ` (${detail})` : ''}`;
      }
    }
    this.transition(id, s, now, 'active', 'active-check');
  }

  /** A passive failure (connect failure / 5xx on the response path / failed scrape). */
  recordFailure(id: string, evidence: Exclude<HealthEvidence, 'active'>, detail = ''): void {
    const now = this.opts.clock.nowMs();
    const s = this.state(id);
    this.transition(id, s, now, 'active', 'half-open'); // report an ejection that ended meanwhile
    const cls = classOf(evidence);
    s.passiveFails[cls]++;
    const ejected = s.ejectedUntilMs > now;
    if (!ejected && ((s.halfOpen && s.ejectedBy === cls) || s.passiveFails[cls] >= this.opts.consecutiveFailures)) {
      if (now - s.lastEjectedAtMs > this.opts.maxEjectionMs + this.ejectionMs(s.ejections)) s.ejections = 0;
      s.ejections++;
      s.ejectedUntilMs = now + this.ejectionMs(s.ejections);
      s.lastEjectedAtMs = now;
      s.halfOpen = false;
      s.passiveFails[cls] = 0;
      s.ejectedBy = cls;
      s.activeFailedDuringEjection = !s.activeUp;
      s.lastReason = `${evidence}${detail !== '' ? `: ${detail}` : ''}`;
    }
    this.transition(id, s, now, evidence, s.lastReason ?? evidence);
  }

  /** A passive success: a response below 500 (`response`), a good scrape (`scrape`). */
  recordSuccess(id: string, cls: EvidenceClass): void {
    const s = this.states.get(id);
    if (s === undefined) return;
    const now = this.opts.clock.nowMs();
    this.transition(id, s, now, 'active', 'half-open');
    s.passiveFails[cls] = 0;
    // A half-open engine that does well on what ejected it is closed again.
    if (s.halfOpen && s.ejectedBy === cls) s.halfOpen = false;
  }

  /** Forgets engines no longer in the fleet. */
  retain(ids: Iterable<string>): void {
    const keep = new Set(ids);
    for (const id of [...this.states.keys()]) if (!keep.has(id)) this.states.delete(id);
  }

  view(id: string): EngineHealthView {
    const now = this.opts.clock.nowMs();
    const s = this.states.get(id);
    if (s === undefined) {
      return {
        endpointId: id,
        routable: true,
        activeUp: true,
        ejectedForMs: 0,
        halfOpen: false,
        ejections: 0,
        consecutivePassiveFailures: 0,
      };
    }
    this.settle(s, now);
    return {
      endpointId: id,
      routable: this.routable(s, now),
      activeUp: s.activeUp,
      ejectedForMs: Math.max(0, s.ejectedUntilMs - now),
      halfOpen: s.halfOpen,
      ejections: s.ejections,
      consecutivePassiveFailures: Math.max(s.passiveFails.response, s.passiveFails.scrape),
      ...(s.lastReason !== undefined ? { lastReason: s.lastReason } : {}),
    };
  }

  /**
   * Re-evaluates time-driven transitions (an ejection ending: half-open) and reports them.
   * Call periodically; verdicts are right without it, only the `onUp` report waits for it.
   */
  tick(): void {
    const now = this.opts.clock.nowMs();
    for (const [id, s] of this.states) this.transition(id, s, now, 'active', 'half-open');
  }

  private ejectionMs(ejections: number): number {
    const n = Math.max(1, ejections);
    return Math.min(this.opts.maxEjectionMs, this.opts.baseEjectionMs * 2 ** Math.min(30, n - 1));
  }

  private routable(s: State, now: number): boolean {
    return s.activeUp && s.ejectedUntilMs <= now;
  }

  /** An expired ejection turns into half-open. */
  private settle(s: State, now: number): void {
    if (s.ejectedUntilMs > 0 && s.ejectedUntilMs <= now && !s.halfOpen) {
      s.halfOpen = true;
      s.ejectedUntilMs = 0;
    }
  }

  private transition(id: string, s: State, now: number, evidence: HealthEvidence, detail: string): void {
    this.settle(s, now);
    const routable = this.routable(s, now);
    if (routable === s.wasRoutable) return;
    s.wasRoutable = routable;
    if (routable) this.opts.onUp?.(id, s.halfOpen ? 'half-open' : 'active-check');
    else this.opts.onDown?.(id, evidence, detail);
  }

  private state(id: string): State {
    let s = this.states.get(id);
    if (s === undefined) {
      s = {
        activeUp: true,
        activeFails: 0,
        activeOks: 0,
        activeFailedDuringEjection: false,
        refusedWhileDown: false,
        passiveFails: { response: 0, scrape: 0 },
        ejectedBy: 'response',
        ejectedUntilMs: 0,
        halfOpen: false,
        ejections: 0,
        lastEjectedAtMs: Number.NEGATIVE_INFINITY,
        wasRoutable: true,
      };
      this.states.set(id, s);
    }
    return s;
  }
}
