/**
 * The YAML reference of every plugin type (docs/plugins.md), rendered from the plugins'
 * own parameter schemas (and the presets' graphs from their data) (`z.toJSONSchema`: types, ranges, defaults, `.describe()` texts),
 * so the reference cannot drift from what the config accepts. A unit test fails when the
 * committed file differs from this rendering; `node dist/scripts/gen-plugin-docs.js`
 * rewrites it.
 */
import { z } from 'zod';
import type { PluginCatalog, PluginType } from '../framework/plugin-api.js';
import { renderPresetReference } from './presets/preset-reference.js';

interface JsonSchema {
  readonly type?: string;
  readonly enum?: readonly unknown[];
  readonly default?: unknown;
  readonly description?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: number;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly items?: JsonSchema;
}

export function renderPluginReference(catalog: PluginCatalog): string {
  const types = catalog.all();
  const out = [
    '# Plugin reference',
    '',
    "<!-- Generated from the plugins' parameter schemas by `node dist/scripts/gen-plugin-docs.js`; do not edit. -->",
    '',
    'Every plugin type that `plugins[].type` accepts, with its parameters (`plugins[].parameters`).',
    'A parameter left out takes its default; unknown parameters are rejected. How plugins are',
    'combined into profiles: [configuration.md](configuration.md#plugin-graph) and',
    '[scheduling.md](scheduling.md).',
    '',
    ...types.map((t) => `- [\`${t.type}\`](#${t.type})`),
    '- [Presets](#presets): the graph each `strategy:` name stands for',
    '',
  ];
  for (const t of types) out.push(...renderType(t));
  out.push(...renderPresetReference());
  return out.join('\n');
}

function renderType(t: PluginType): string[] {
  const schema = z.toJSONSchema(t.parameters, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const lines = [`## ${t.type}`, '', t.description, ''];
  const props = Object.entries(schema.properties ?? {});
  if (props.length === 0) return [...lines, 'No parameters.', ''];
  lines.push('| parameter | type | default | meaning |', '| --- | --- | --- | --- |');
  for (const [name, p] of props) rows(name, p, lines);
  return [...lines, ''];
}

function rows(name: string, p: JsonSchema, lines: string[]): void {
  if (p.type === 'object' && p.properties !== undefined) {
    lines.push(`| \`${name}\` | mapping | | ${cell(p.description ?? '')} |`);
    for (const [k, c] of Object.entries(p.properties)) rows(`${name}.${k}`, c, lines);
    return;
  }
  const def = p.default === undefined ? '' : `\`${JSON.stringify(p.default)}\``;
  lines.push(`| \`${name}\` | ${typeOf(p)} | ${def} | ${cell(p.description ?? '')} |`);
}

function typeOf(p: JsonSchema): string {
  if (p.enum !== undefined) return p.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  const t = p.type ?? 'any';
  const lo = p.exclusiveMinimum !== undefined ? `> ${p.exclusiveMinimum}` : p.minimum !== undefined ? `>= ${p.minimum}` : undefined;
  const hi = p.maximum !== undefined ? `<= ${p.maximum}` : undefined;
  const range = [lo, hi].filter((x) => x !== undefined).join(', ');
  return range === '' ? t : `${t} (${range})`;
}

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}
