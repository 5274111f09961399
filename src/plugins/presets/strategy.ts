/**
 * `strategy:`: a preset by name, optionally adjusted, resolved into the plugin graph it
 * stands for:
 *
 *   strategy: cache-aware
 *   strategy:
 *     name: cache-aware
 *     weights: { prefix-cache: 5, kv-usage-scorer: 0 }   # scorer weights (0 drops the scorer from the profile)
 *     plugins:
 *       imbalance-escape-filter: { absThreshold: 8 }     # parameters over the preset's
 *       session-affinity-scorer: { header: x-session-id } # an optional plugin: named = on
 *       cold-request-placement: false                    # left out
 *
 * In a preset with several profiles (auto) a weight applies to every profile that
 * references the scorer; `weights: {<profile>: {<scorer>: w}}` sets it in one profile.
 * Parameters are merged over the preset's (mappings key by key, lists replaced) and then
 * checked by each plugin's own schema like any explicit graph. Why one surface: a knob that
 * exists only in a shorthand drifts from the plugin it feeds; here every knob is the
 * plugin's own parameter, documented once in docs/plugins.md.
 */
import { z } from 'zod';
import type { GraphSpec, PluginSpec, ProfileSpec } from '../../scheduling/plugin-graph.js';
import { deepMerge, isMapping } from '../../util/deep-merge.js';
import { checked, expecting, oneOf, section } from '../../util/schema.js';
import { PRESET_NAMES, PRESETS, type StrategyName } from './presets.js';

const isWeight = (v: unknown): v is number => typeof v === 'number' && v >= 0 && v <= 1000;

const strategyObject = section({
  name: oneOf(PRESET_NAMES).describe('The preset (docs/configuration.md#presets).'),
  weights: z
    .record(
      z.string(),
      checked<number | Record<string, number>>('a weight in [0, 1000], or a mapping of scorer weights in [0, 1000]', (v) =>
        isWeight(v) || (isMapping(v) && Object.values(v).every(isWeight)) ? (v as number | Record<string, number>) : undefined,
      ),
      { error: expecting('a mapping') },
    )
    .optional()
    .describe('Scorer weights by instance name, or by profile name then instance name; 0 drops the scorer from the profile.'),
  plugins: z
    .record(
      z.string(),
      checked<Record<string, unknown> | false>('a mapping of parameters, or false', (v) => (v === false || isMapping(v) ? v : undefined)),
      { error: expecting('a mapping') },
    )
    .optional()
    .describe("Per instance name: parameters merged over the preset's (turns an optional plugin on), or false (left out)."),
});

const presetName = oneOf(PRESET_NAMES);

/**
 * `strategy:` as written: a preset name or `{name, weights, plugins}`; normalised to the
 * mapping. A bad name is reported at `strategy` (or `strategy.name` in the mapping form).
 */
export const strategySchema = z
  .unknown()
  .transform((v, ctx) => {
    if (v === undefined) return undefined;
    const r = typeof v === 'string' ? presetName.safeParse(v) : strategyObject.safeParse(v);
    if (r.success) return typeof r.data === 'string' ? { name: r.data } : r.data;
    for (const iss of r.error.issues) ctx.addIssue({ code: 'custom', message: iss.message, path: [...iss.path], input: v });
    return z.NEVER;
  })
  .optional()
  .describe('A preset, optionally adjusted; expands to plugins + schedulingProfiles when those are not given.') as unknown as z.ZodType<
  StrategyChoice | undefined
>;

export type StrategyChoice = z.output<typeof strategyObject>;
/** `strategy:` as a document may write it. */
export type StrategyInput = StrategyName | z.input<typeof strategyObject>;

/**
 * The graph `choice` stands for, or the problems of its overrides (unknown instance or
 * profile names, a weight on a non-scorer), each with its `strategy.…` path.
 */
export function resolveStrategy(choice: StrategyChoice): { spec: GraphSpec; problems: string[] } {
  const preset = PRESETS[choice.name];
  const problems: string[] = [];
  const names = preset.plugins.map(nameOf);
  const known = `the ${choice.name} preset has: ${names.join(', ')}`;
  const overrides = choice.plugins ?? {};
  for (const k of Object.keys(overrides)) if (!names.includes(k)) problems.push(`strategy.plugins.${k}: no plugin named "${k}" (${known})`);

  // Scorer weights: instance → weight for every profile, or profile → instance → weight.
  const profileNames = preset.schedulingProfiles.map((p) => p.name);
  const scorers = new Set(
    preset.schedulingProfiles.flatMap((p) => p.plugins.filter((r) => r.weight !== undefined).map((r) => r.pluginRef)),
  );
  const weightOf = new Map<string, number>();
  const checkScorer = (at: string, ref: string): boolean => {
    if (scorers.has(ref)) return true;
    problems.push(
      names.includes(ref) ? `${at}: "${ref}" is not a scorer in the ${choice.name} preset` : `${at}: no plugin named "${ref}" (${known})`,
    );
    return false;
  };
  for (const [k, w] of Object.entries(choice.weights ?? {})) {
    if (typeof w === 'number') {
      if (checkScorer(`strategy.weights.${k}`, k)) for (const p of profileNames) weightOf.set(`${p}\u0000${k}`, w);
    } else if (!profileNames.includes(k)) {
      problems.push(`strategy.weights.${k}: no profile named "${k}" (the ${choice.name} preset has: ${profileNames.join(', ')})`);
    } else {
      for (const [ref, pw] of Object.entries(w)) if (checkScorer(`strategy.weights.${k}.${ref}`, ref)) weightOf.set(`${k}\u0000${ref}`, pw);
    }
  }
  if (problems.length > 0) return { spec: { plugins: [], schedulingProfiles: [] }, problems };

  const enabled = new Set<string>();
  for (const p of preset.plugins) {
    const name = nameOf(p);
    const o = overrides[name];
    if (o === false) continue;
    const weighted = [...weightOf].some(([k, w]) => k.endsWith(`\u0000${name}`) && w > 0);
    if (p.optional !== true || o !== undefined || weighted) enabled.add(name);
  }
  const plugins: PluginSpec[] = preset.plugins.filter((p) => enabled.has(nameOf(p))).map((p) => withParameters(p, overrides[nameOf(p)]));
  const schedulingProfiles: ProfileSpec[] = preset.schedulingProfiles.map((prof) => ({
    name: prof.name,
    plugins: prof.plugins.flatMap((r) => {
      if (!enabled.has(r.pluginRef)) return [];
      const w = weightOf.get(`${prof.name}\u0000${r.pluginRef}`) ?? r.weight;
      if (w === 0) return [];
      return [w === undefined ? { pluginRef: r.pluginRef } : { pluginRef: r.pluginRef, weight: w }];
    }),
  }));
  return { spec: { plugins, schedulingProfiles }, problems };
}

/** The graph of a preset with no adjustments. */
export function presetGraph(name: StrategyName): GraphSpec {
  return resolveStrategy({ name }).spec;
}

function nameOf(p: PluginSpec): string {
  return p.name ?? p.type;
}

function withParameters(p: PluginSpec, over: Readonly<Record<string, unknown>> | false | undefined): PluginSpec {
  const parameters = over === undefined || over === false ? p.parameters : deepMerge(p.parameters ?? {}, over);
  const out: PluginSpec = { type: p.type, ...(p.name !== undefined ? { name: p.name } : {}) };
  return parameters !== undefined && Object.keys(parameters).length > 0 ? { ...out, parameters } : out;
}
