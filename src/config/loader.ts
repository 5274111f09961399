/**
 * Public entry of the config module: import from here.
 *   parseConfig(raw)      validate a parsed document (throws BAD_CONFIG listing all problems)
 *   loadConfigFile(path)  read YAML + CACHEROUTE_* env overrides + validate
 *   defaultConfig(over)   validated config for tests
 */
export { parseConfig, type ParseOptions } from './parse-config.js';
export { loadConfigFile } from './load-config-file.js';
export { defaultConfig, type DeepPartial } from './default-config.js';
export { applyEnvOverrides, ENV_OVERRIDES, type Env } from './env-overrides.js';
