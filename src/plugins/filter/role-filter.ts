/**
 * Keeps the engines whose prefill/decode role is one of `roles` (an engine without a role
 * is `both`). The disaggregation handler's decode profile keeps decode and both engines, its
 * prefill profile prefill engines (llm-d's decode-filter / prefill-filter by `llm-d.ai/role`).
 *
 * Not fail-open: a profile with no engine of its role answers NO_ENDPOINT, which the
 * disaggregation handler reads as "no prefill engine" (and serves the request aggregated).
 */
import { ENGINE_ROLES, roleOf, type EngineRole } from '../../core/types.js';
import { definePlugin } from '../../framework/plugin-api.js';
import type { Candidate, CycleState, Filter } from '../../framework/types.js';
import { listOf, oneOf, section } from '../../util/schema.js';

export const ROLE_FILTER = 'role-filter';

export class RoleFilter implements Filter {
  private readonly keep: ReadonlySet<EngineRole>;

  constructor(
    readonly name: string,
    roles: readonly EngineRole[],
  ) {
    this.keep = new Set(roles);
  }

  filter(_state: CycleState, candidates: readonly Candidate[]): readonly Candidate[] {
    let drop = 0;
    for (const c of candidates) if (!this.keep.has(roleOf(c.endpoint))) drop++;
    if (drop === 0) return candidates;
    return candidates.filter((c) => this.keep.has(roleOf(c.endpoint)));
  }
}

export const roleFilter = definePlugin({
  type: ROLE_FILTER,
  description:
    'Keeps engines whose prefill/decode role (llm-d.ai/role; none = both) is one of `roles`; an empty result is NO_ENDPOINT (no fail-open).',
  parameters: section({
    roles: listOf(oneOf(ENGINE_ROLES), { unique: true, minItems: 1 })
      .default(['decode', 'both'])
      .describe('Roles to keep: decode profiles keep decode and both, prefill profiles prefill.'),
  }),
  create: (name, p) => new RoleFilter(name, p.roles),
});
