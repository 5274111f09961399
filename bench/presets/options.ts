/**
 * Preset options: `--option name=value` on the command line picks a variant of one preset
 * (e.g. where the engines run) instead of a preset per variant. Every option is checked
 * against the preset's list before anything runs: an unknown name or value is an error
 * naming what is accepted, never a silent default.
 */
import type { PresetOption, PresetSpec } from './types.js';

/** The accepted values of an option, as the help and error messages print them. */
export function optionValues(o: PresetOption): string {
  return 'values' in o ? o.values.join('|') : `${o.integer.min}..${o.integer.max}`;
}

/** `name=value` pairs → the preset built with them (defaults for the rest). @throws Error on a bad pair. */
export function applyOptions(preset: PresetSpec, pairs: readonly string[]): PresetSpec {
  const options = preset.options ?? [];
  if (pairs.length === 0) return preset;
  if (options.length === 0 || preset.withOptions === undefined) throw new Error(`preset ${preset.name} takes no --option`);
  const chosen: Record<string, string> = Object.fromEntries(options.map((o) => [o.name, o.default]));
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const name = eq > 0 ? pair.slice(0, eq).trim() : '';
    const value = eq > 0 ? pair.slice(eq + 1).trim() : '';
    const option = options.find((o) => o.name === name);
    if (option === undefined)
      throw new Error(`--option ${pair}: expected name=value with name one of ${options.map((o) => o.name).join(', ')}`);
    const ok =
      'values' in option
        ? option.values.includes(value)
        : /^\d+$/.test(value) && Number(value) >= option.integer.min && Number(value) <= option.integer.max;
    if (!ok) throw new Error(`--option ${name}: '${value}' is not one of ${optionValues(option)}`);
    chosen[name] = value;
  }
  return preset.withOptions(chosen);
}
