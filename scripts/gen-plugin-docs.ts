/** Writes docs/plugins.md from the built-in plugins' schemas: `node dist/scripts/gen-plugin-docs.js`. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderPluginReference } from '../src/plugins/plugin-reference.js';
import { builtinCatalog } from '../src/plugins/register-builtins.js';

const target = fileURLToPath(new URL('../../docs/plugins.md', import.meta.url));
writeFileSync(target, renderPluginReference(builtinCatalog()));
process.stdout.write(`wrote ${target}\n`);
