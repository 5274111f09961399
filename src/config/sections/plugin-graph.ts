/**
 * `plugins:` and `schedulingProfiles:` sections: the plugin graph in the shape of the GIE /
 * llm-d EndpointPickerConfig. Their shape is checked here; each plugin's `parameters` are
 * checked against that plugin type's own schema (parse-config.ts, with the catalog).
 */
import { z } from 'zod';
import { expecting, listOf, num, section, str } from '../../util/schema.js';
import type { ConfigSection } from '../config-section.js';

const NAME = str({ pattern: /^[A-Za-z0-9][A-Za-z0-9._/-]{0,126}$/, what: 'name of letters, digits, ".", "_", "/" or "-"' });

const pluginEntry = section({
  type: str({ nonEmpty: true, what: 'plugin type' }).describe('Registered plugin type (docs/plugins.md).'),
  name: NAME.optional().describe('Instance name, unique; defaults to the type.'),
  parameters: z
    .record(z.string(), z.unknown(), { error: expecting('a mapping') })
    .optional()
    .describe("The plugin's parameters (its own schema)."),
});

const profileEntry = section({
  name: NAME,
  plugins: listOf(
    section({
      pluginRef: NAME.describe('Name of an instance in `plugins`.'),
      weight: num({ min: 0, max: 1000 }).optional().describe('Scorer weight (default 1).'),
    }),
    { minItems: 1 },
  ),
});

export type PluginEntry = z.output<typeof pluginEntry>;
export type ProfileEntry = z.output<typeof profileEntry>;

export const pluginsSection = { key: 'plugins', schema: listOf(pluginEntry).optional() } as const satisfies ConfigSection;
export const schedulingProfilesSection = {
  key: 'schedulingProfiles',
  schema: listOf(profileEntry, { minItems: 1 }).optional(),
} as const satisfies ConfigSection;
