/**
 * Single-profile handler: always runs the one named profile (or the only one). A graph with
 * one profile needs no handler at all; this one lets a config keep several profiles and
 * pin the one that runs.
 */
import { RouterError } from '../../core/errors.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { CycleState, Profile, ProfileHandler } from '../../framework/types.js';
import { section, str } from '../../util/schema.js';

export const SINGLE_PROFILE_HANDLER = 'single-profile-handler';

export class SingleProfileHandler implements ProfileHandler {
  private chosen: Profile | undefined;

  constructor(
    readonly name: string,
    private readonly profile: string | undefined,
  ) {}

  get requiredProfiles(): readonly string[] {
    return this.profile !== undefined ? [this.profile] : [];
  }

  pickProfile(_state: CycleState, profiles: ReadonlyMap<string, Profile>): Profile {
    if (this.chosen !== undefined) return this.chosen;
    const p = this.profile !== undefined ? profiles.get(this.profile) : profiles.size === 1 ? profiles.values().next().value : undefined;
    if (p === undefined) throw new RouterError('BAD_CONFIG', `${this.name}: name the profile to run (parameters.profile)`);
    this.chosen = p;
    return p;
  }
}

export const singleProfileHandler = definePlugin({
  type: SINGLE_PROFILE_HANDLER,
  description: 'Always runs one profile: the one named by `profile`, or the only one.',
  parameters: section({
    profile: str({ nonEmpty: true }).optional().describe('Name of the profile to run (required with several profiles).'),
  }),
  create: (name, p) => new SingleProfileHandler(name, p.profile),
});
