/**
 * The presets section of docs/plugins.md, rendered from the preset data (presets.ts), so the
 * documented graphs are the ones `strategy:` runs.
 */
import { PRESET_NAMES, PRESETS, type Preset } from './presets.js';

export function renderPresetReference(): string[] {
  const out = [
    '## Presets',
    '',
    "What each `strategy:` name stands for: plugin instances with the parameters the preset sets (everything else is the plugin's default, above) and the profiles that reference them. Instances marked *optional* run only when `strategy.plugins` names them or `strategy.weights` gives them a weight above 0 ([configuration.md](configuration.md#strategy)).",
    '',
  ];
  for (const name of PRESET_NAMES) out.push(...renderPreset(name, PRESETS[name]));
  return out;
}

function renderPreset(name: string, p: Preset): string[] {
  const lines = [`### ${name}`, '', p.description, '', '| instance | type | parameters set by the preset |', '| --- | --- | --- |'];
  for (const x of p.plugins) {
    const params = x.parameters === undefined ? '' : `\`${JSON.stringify(x.parameters)}\``;
    lines.push(
      `| \`${x.name ?? x.type}\`${x.optional === true ? ' *(optional)*' : ''} | \`${x.type}\` | ${params.replace(/\|/g, '\\|')} |`,
    );
  }
  lines.push('');
  for (const prof of p.schedulingProfiles) {
    const refs = prof.plugins.map((r) => (r.weight === undefined ? `\`${r.pluginRef}\`` : `\`${r.pluginRef}\` ×${r.weight}`));
    lines.push(`Profile \`${prof.name}\`: ${refs.join(' → ')}`, '');
  }
  return lines;
}
