/**
 * The `auto` profile handler: measure, then choose. It picks one of four named profiles per
 * request from the data layer's sliding-window traffic statistics (AutoModeSelector,
 * auto-mode.ts, re-evaluated every evaluateIntervalMs):
 *
 *   load         balance load (the auto preset: round robin, or least loaded)
 *   affinity     prefix affinity with a threshold fallback, for high reuse on few engines
 *   cache-aware  prefix / queue / KV-usage scoring with the imbalance escape, for high
 *                reuse on many engines
 *   learning     the initial mode while reuse is unknown (the preset: the affinity profile
 *                whose cold requests go to the load profile's picker)
 *
 * Why a profile handler and not one plugin running hidden pipelines: every profile is plain
 * configuration that can be read, changed and tested on its own; plugins shared by several
 * profiles (the prefix index) are one instance, and their hooks learn from every decision
 * whichever profile ran. The chosen profile is reported on the decision (`profile`), the
 * handler's time is a timing of its own, and mode switches are logged with their numbers.
 */
import type { SignalView } from '../../framework/signal-view.js';
import type { EndpointView } from '../../framework/plugin-api.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { CycleState, Profile, ProfileHandler } from '../../framework/types.js';
import { RouterError } from '../../core/errors.js';
import { int, num, oneOf, section, str } from '../../util/schema.js';
import { AUTO_MODES, AutoModeSelector, type AutoMode } from './auto-mode.js';

export const AUTO_PROFILE_HANDLER = 'auto-profile-handler';

export class AutoProfileHandler implements ProfileHandler {
  private lastEvalMs = Number.NEGATIVE_INFINITY;
  private byMode: Record<AutoMode, Profile> | undefined;

  constructor(
    readonly name: string,
    readonly selector: AutoModeSelector,
    /** Profile name per mode. */
    readonly profileNames: Readonly<Record<AutoMode, string>>,
    private readonly signals: SignalView,
    private readonly endpoints: EndpointView,
    private readonly evaluateIntervalMs: number,
  ) {}

  get mode(): AutoMode {
    return this.selector.current;
  }

  get requiredProfiles(): readonly string[] {
    return Object.values(this.profileNames);
  }

  pickProfile(state: CycleState, profiles: ReadonlyMap<string, Profile>): Profile {
    if (state.nowMs - this.lastEvalMs >= this.evaluateIntervalMs) {
      this.lastEvalMs = state.nowMs;
      this.selector.evaluate(state.nowMs, this.signals.traffic(), this.endpoints.size);
    }
    const mode = this.selector.current;
    state.notes.push(`auto: ${mode}`);
    this.byMode ??= resolve(this.profileNames, profiles);
    return this.byMode[mode];
  }

  debugState(): unknown {
    return { mode: this.selector.current, profiles: this.profileNames, switches: this.selector.switches() };
  }
}

function resolve(names: Readonly<Record<AutoMode, string>>, profiles: ReadonlyMap<string, Profile>): Record<AutoMode, Profile> {
  const out = {} as Record<AutoMode, Profile>;
  for (const mode of AUTO_MODES) {
    const p = profiles.get(names[mode]);
    if (p === undefined) throw new RouterError('BAD_CONFIG', `auto profile handler: no profile named "${names[mode]}" (mode ${mode})`);
    out[mode] = p;
  }
  return out;
}

const FRACTION = num({ min: 0, max: 1 });
const PROFILE = str({ nonEmpty: true });

/** The auto knobs. */
export const AUTO_KNOBS = {
  lowReuse: FRACTION.default(0.2).describe('Below this share of requests with a shared prefix, balance load.'),
  highReuse: FRACTION.default(0.5).describe('At or above it, use an affinity profile.'),
  fewEngines: int({ min: 1, max: 100_000 }).default(4).describe('Pools up to this size use the affinity profile, larger ones cache-aware.'),
  minRequests: int({ min: 1, max: 10_000_000 }).default(20).describe('Requests in the window needed before acting.'),
  minDwellMs: int({ min: 0, max: 86_400_000 }).default(10_000).describe('Minimum time between two switches.'),
  evaluateIntervalMs: int({ min: 1, max: 3_600_000 }).default(1000).describe('How often the statistics are re-evaluated.'),
  initial: oneOf(AUTO_MODES).default('learning').describe('The mode before the first evidence-based choice.'),
};

export const autoProfileHandler = definePlugin({
  type: AUTO_PROFILE_HANDLER,
  description:
    'Chooses the profile per request from the traffic statistics: `load` below lowReuse shared prefixes, `affinity` (few engines) or `cache-aware` (more) from highReuse, hysteresis in between, `learning` until the evidence is in.',
  parameters: section({
    ...AUTO_KNOBS,
    profiles: section({
      learning: PROFILE.default('learning'),
      load: PROFILE.default('load'),
      affinity: PROFILE.default('affinity'),
      'cache-aware': PROFILE.default('cache-aware'),
    })
      .prefault({})
      .describe('Profile name per mode.'),
  }).refine((p) => p.lowReuse <= p.highReuse, { path: ['lowReuse'], message: 'must not exceed highReuse' }),
  create: (name, p, handle) =>
    new AutoProfileHandler(
      name,
      new AutoModeSelector(
        {
          lowReuse: p.lowReuse,
          highReuse: p.highReuse,
          fewEngines: p.fewEngines,
          minRequests: p.minRequests,
          minDwellMs: p.minDwellMs,
          initial: p.initial,
        },
        handle.logger,
      ),
      p.profiles,
      handle.signals,
      handle.endpoints,
      p.evaluateIntervalMs,
    ),
});
