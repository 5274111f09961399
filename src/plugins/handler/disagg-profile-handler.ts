/**
 * The prefill/decode disaggregation profile handler (llm-d's disagg-profile-handler, decode
 * first). Per request:
 *   1. the `decode` profile picks the decode engine (by load and by how much of the prompt it
 *      holds: whatever scorers that profile has) — this is the request's destination;
 *   2. the decider (pd-decider.ts) looks at the prompt's size and the part of it the decode
 *      engine does not hold; `Prefer: if-available` requests that would need a prefill leg
 *      are refused here (PRECONDITION_FAILED, 412) so the caller can run it itself;
 *   3. the `prefill` profile picks the prefill engine (prefix affinity and prefill-token
 *      load), unless the pool is empty, the pick is the decode engine itself, or the pick is
 *      saturated (pd-decider.ts: its queued prefill against the decode engine's) — then the
 *      request is served aggregated on the decode engine.
 * The decision's `disagg` part names the prefill engine and why prefill was or was not split
 * off; the edge puts the prefill engine in `x-prefiller-host-port` for the decode-side sidecar.
 *
 * Why decode first: the decode engine is where the request's tokens are generated, so its
 * load matters on every request; and only once it is known can the decider see whether the
 * prefill leg is worth a second request and a KV transfer.
 */
import { RouterError } from '../../core/errors.js';
import type { DisaggDecision, DisaggReason, Endpoint, RequestOutcome, RouteDecision, RouteRequest } from '../../core/types.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type {
  CompletedHook,
  CycleState,
  EndpointsChangedHook,
  Profile,
  ProfileHandler,
  RoutedHook,
  StagePick,
  StageRunner,
} from '../../framework/types.js';
import type { Clock } from '../../util/clock.js';
import { section, str } from '../../util/schema.js';
import {
  beforePrefillPick,
  DECIDER_PARAMETERS,
  needsPrefill,
  PrefillQueueLedger,
  prefillSaturated,
  type DeciderParams,
} from './pd-decider.js';

export const DISAGG_PROFILE_HANDLER = 'disagg-profile-handler';

export class DisaggProfileHandler implements ProfileHandler, RoutedHook, CompletedHook, EndpointsChangedHook {
  private decode: Profile | undefined;
  private prefill: Profile | undefined;
  /** Each engine's queued prefill, for the saturation rule. */
  readonly queues: PrefillQueueLedger;

  constructor(
    readonly name: string,
    private readonly decodeProfile: string,
    private readonly prefillProfile: string,
    readonly decider: DeciderParams,
    private readonly clock: Clock,
  ) {
    this.queues = new PrefillQueueLedger(decider.prefillTokensPerSecond);
  }

  get requiredProfiles(): readonly string[] {
    return [this.decodeProfile, this.prefillProfile];
  }

  pickProfile(_state: CycleState, profiles: ReadonlyMap<string, Profile>): Profile {
    this.decode ??= need(profiles, this.decodeProfile, this.name);
    return this.decode;
  }

  secondStage(state: CycleState, first: StagePick, profiles: ReadonlyMap<string, Profile>, run: StageRunner): DisaggDecision {
    const req = state.request;
    const promptTokens = Math.max(0, Math.round(req.promptTokens));
    const tokensPerChar = req.promptChars > 0 ? promptTokens / req.promptChars : 0;
    const cached = Math.min(promptTokens, Math.round((first.annotation.matchedChars ?? 0) * tokensPerChar));
    const uncachedTokens = promptTokens - cached;
    if (req.conditionalDecode === true && needsPrefill(this.decider, promptTokens, uncachedTokens)) {
      throw new RouterError(
        'PRECONDITION_FAILED',
        `Prefer: if-available: the decode engine does not hold this prompt (${uncachedTokens} of ${promptTokens} tokens uncached)`,
      );
    }
    const base = { promptTokens, uncachedTokens };
    const early = beforePrefillPick(this.decider, promptTokens, uncachedTokens);
    if (early !== undefined) return this.note(state, { ...base, why: early });

    this.prefill ??= need(profiles, this.prefillProfile, this.name);
    let pick: StagePick;
    try {
      pick = run(this.prefill);
    } catch (err) {
      if (err instanceof RouterError && err.code === 'NO_ENDPOINT') return this.note(state, { ...base, why: 'no-prefill-engine' });
      throw err;
    }
    const chosen = pick.chosen;
    if (chosen.endpoint.id === first.chosen.endpoint.id) return this.note(state, { ...base, why: 'same-engine' });
    const prefillCachedTokens = Math.min(promptTokens, Math.round((pick.annotation.matchedChars ?? 0) * tokensPerChar));
    const about = { ...base, prefillCachedTokens, prefillReason: pick.reason };
    const queues = {
      prefillAhead: this.queues.ahead(chosen.endpoint.id, state.nowMs),
      prefillUncached: promptTokens - prefillCachedTokens,
      decodeAhead: this.queues.ahead(first.chosen.endpoint.id, state.nowMs),
      decodeUncached: uncachedTokens,
    };
    if (prefillSaturated(this.decider, queues)) return this.note(state, { ...about, why: 'prefill-saturated' });
    return this.note(state, { ...about, why: 'split', prefill: chosen.endpoint });
  }

  onRouted(state: CycleState, decision: RouteDecision): void {
    this.queues.routed(state.request.requestId, decision, state.nowMs);
  }

  onFirstByte(request: RouteRequest): void {
    this.queues.firstByte(request.requestId);
  }

  onCompleted(request: RouteRequest, _decision: RouteDecision, _outcome: RequestOutcome): void {
    this.queues.completed(request.requestId, this.clock.nowMs());
  }

  onEndpointsChanged(endpoints: readonly Endpoint[]): void {
    this.queues.retain(endpoints);
  }

  private note(state: CycleState, d: DisaggDecision & { why: DisaggReason }): DisaggDecision {
    state.notes.push(
      `pd: ${d.why}${d.prefill !== undefined ? ` prefill=${d.prefill.id}` : ''} (uncached ${d.uncachedTokens}/${d.promptTokens} tokens on decode)`,
    );
    return d;
  }

  debugState(): unknown {
    return { decodeProfile: this.decodeProfile, prefillProfile: this.prefillProfile, ...this.decider, trackedRequests: this.queues.size };
  }
}

function need(profiles: ReadonlyMap<string, Profile>, name: string, handler: string): Profile {
  const p = profiles.get(name);
  if (p === undefined) throw new RouterError('BAD_CONFIG', `${handler}: no profile named "${name}"`);
  return p;
}

const PROFILE = str({ nonEmpty: true });

export const disaggProfileHandler = definePlugin({
  type: DISAGG_PROFILE_HANDLER,
  description:
    "Prefill/decode disaggregation, decode first: the decode profile picks the destination; when the prompt is long enough, the decode engine lacks enough of it and the prefill pick's queued prefill is not more than the decode engine's, the prefill profile picks a prefill engine (sent to the decode-side sidecar in x-prefiller-host-port). `Prefer: if-available` requests that would need a prefill leg get 412.",
  parameters: section({
    decodeProfile: PROFILE.default('decode').describe('Profile that picks the decode engine (the destination).'),
    prefillProfile: PROFILE.default('prefill').describe('Profile that picks the prefill engine.'),
    ...DECIDER_PARAMETERS,
  }),
  create: (name, p, handle) =>
    new DisaggProfileHandler(
      name,
      p.decodeProfile,
      p.prefillProfile,
      {
        split: p.split,
        minUncachedTokens: p.minUncachedTokens,
        minPromptTokens: p.minPromptTokens,
        maxPrefillPendingTokens: p.maxPrefillPendingTokens,
        prefillTokensPerSecond: p.prefillTokensPerSecond,
      },
      handle.clock,
    ),
});
