/**
 * Validation of the whole config document with zod: every section of config-sections.ts
 * is checked, every problem is collected and reported together with its field path,
 * unknown keys are rejected with a "did you mean" hint, defaults are applied.
 *
 * Then the plugin graph is resolved: explicit `plugins` + `schedulingProfiles`, or the
 * preset `strategy` names (default cache-aware, adjusted by its `weights` / `plugins`), and every plugin's
 * `parameters` are checked against its type's own schema from the plugin catalog
 * (`plugins[2].parameters.weight: expected number ...`).
 */
import { resolveStrategy } from '../plugins/presets/strategy.js';
import { builtinCatalog } from '../plugins/register-builtins.js';
import type { PluginCatalog } from '../framework/plugin-api.js';
import { validateGraphParameters, type GraphSpec } from '../scheduling/plugin-graph.js';
import { configError, formatIssues, section, withoutNulls } from '../util/schema.js';
import { CONFIG_SECTIONS } from './config-sections.js';
import { DEFAULT_MAX_RECEIVE_MESSAGE_BYTES, DEFAULT_STRATEGY, GRPC_FRAMING_HEADROOM_BYTES } from './defaults.js';
import { applyEnvOverrides, type Env } from './env-overrides.js';
import { isHostNameEntry } from '../util/host-port.js';
import { movedKeys } from './moved-keys.js';
import type { ParsedSections, RouterConfig } from './types.js';

export interface ParseOptions {
  /** Environment for CACHEROUTE_* overrides; none are applied when omitted. */
  readonly env?: Env;
  /** Plugin types the graph may use (default: the built-ins). */
  readonly catalog?: PluginCatalog;
}

const ROOT = section(
  Object.fromEntries(CONFIG_SECTIONS.map((s) => [s.key, s.schema])) as { [K in (typeof CONFIG_SECTIONS)[number] as K['key']]: K['schema'] },
);

let defaultCatalog: PluginCatalog | undefined;

/**
 * Validates a raw document (as produced by a YAML/JSON parser) into a RouterConfig with
 * every default applied and the plugin graph resolved. The result is deeply frozen.
 * @throws RouterError BAD_CONFIG listing all problems, one per line, each with its path.
 */
export function parseConfig(input: unknown, options: ParseOptions = {}): RouterConfig {
  let doc = input;
  let sources = new Map<string, string>();
  if (options.env) {
    const applied = applyEnvOverrides(input, options.env);
    doc = applied.doc;
    sources = applied.sources;
  }
  if (doc === undefined || doc === null) throw configError(['(document): empty']);
  const moved = movedKeys(withoutNulls(doc));
  const clean = moved.doc;
  const r = ROOT.safeParse(clean);
  const engines = enginesProblem(clean);
  const early = [
    ...moved.problems,
    ...(r.success ? [] : formatIssues(r.error.issues, '', sources)),
    ...(engines !== undefined ? [engines] : []),
  ];
  if (!r.success || early.length > 0) throw configError(early);
  const parsed = r.data as unknown as ParsedSections;

  const problems: string[] = [];
  const server = resolveServer(parsed, problems);
  // Host-name entries get a metrics URL per resolved address (src/discovery/).
  const endpoints = parsed.endpoints.map((e) =>
    e.metricsUrl === undefined && parsed.engineMetrics.enabled && !isHostNameEntry(e.address)
      ? { ...e, metricsUrl: `http://${e.address}/metrics` }
      : e,
  );
  if (parsed.admission.mode === 'queue' && parsed.admission.queue.maxWaitMs >= server.requestIdleTimeoutMs) {
    problems.push(`admission.queue.maxWaitMs: must be below server.requestIdleTimeoutMs (${server.requestIdleTimeoutMs})`);
  }
  const completions = parsed.replication.completions;
  if (
    parsed.replication.enabled &&
    server.responseCompletion === 'access-log' &&
    completions.enabled &&
    completions.orphanAgeMs > server.responseIdleTimeoutMs
  ) {
    problems.push(
      `replication.completions.orphanAgeMs: must not exceed server.responseIdleTimeoutMs (${server.responseIdleTimeoutMs}); it shortens the wait for a completion that may be lost`,
    );
  }
  const graph = resolveGraph(parsed, problems);
  if (problems.length > 0) throw configError(problems);
  const catalog = options.catalog ?? (defaultCatalog ??= builtinCatalog());
  const paramProblems = validateGraphParameters(graph.spec, catalog);
  if (paramProblems.length > 0) throw configError(graph.fromPreset ? paramProblems.map((l) => strategyPath(l, graph.spec)) : paramProblems);

  const config: RouterConfig = {
    ...parsed,
    server,
    endpoints,
    strategy: graph.label,
    plugins: graph.spec.plugins,
    schedulingProfiles: graph.spec.schedulingProfiles,
  };
  return deepFreeze(config);
}

/** The engines come from `endpoints`, from `discovery.sources`, or both (read from the raw document). */
function enginesProblem(doc: unknown): string | undefined {
  const d = (typeof doc === 'object' && doc !== null ? doc : {}) as { endpoints?: unknown; discovery?: { sources?: unknown } };
  const sources = typeof d.discovery === 'object' && d.discovery !== null ? d.discovery.sources : undefined;
  if (Array.isArray(sources) && sources.length > 0) return undefined;
  if (d.endpoints === undefined) return 'endpoints: required (at least one endpoint, or discovery.sources)';
  if (Array.isArray(d.endpoints) && d.endpoints.length === 0) return 'endpoints: at least one endpoint is required (or discovery.sources)';
  return undefined;
}

function resolveServer(p: ParsedSections, problems: string[]): RouterConfig['server'] {
  const s = p.server;
  const body = p.requests.maxBodyBytes;
  if (s.maxReceiveMessageBytes !== undefined && s.maxReceiveMessageBytes <= body) {
    problems.push(`server.maxReceiveMessageBytes: must exceed requests.maxBodyBytes (${body}) or large bodies fail in gRPC`);
  }
  const fitted = Math.max(DEFAULT_MAX_RECEIVE_MESSAGE_BYTES, body + GRPC_FRAMING_HEADROOM_BYTES);
  return { ...s, maxReceiveMessageBytes: s.maxReceiveMessageBytes ?? fitted };
}

/** The explicit graph, or the preset `strategy` names (with its adjustments). */
function resolveGraph(p: ParsedSections, problems: string[]): { spec: GraphSpec; label: string; fromPreset: boolean } {
  const explicit = p.plugins !== undefined || p.schedulingProfiles !== undefined;
  if (!explicit) {
    const choice = p.strategy ?? { name: DEFAULT_STRATEGY };
    const resolved = resolveStrategy(choice);
    problems.push(...resolved.problems);
    return { spec: resolved.spec, label: choice.name, fromPreset: true };
  }
  if (p.strategy !== undefined) {
    problems.push('strategy: a preset stands for plugins + schedulingProfiles; give one or the other, not both');
  }
  if (p.plugins === undefined) problems.push('plugins: required with schedulingProfiles');
  if (p.schedulingProfiles === undefined) problems.push('schedulingProfiles: required with plugins');
  const spec: GraphSpec = { plugins: p.plugins ?? [], schedulingProfiles: p.schedulingProfiles ?? [] };
  const profiles = spec.schedulingProfiles;
  return { spec, label: profiles.length === 1 ? profiles[0]!.name : 'custom', fromPreset: false };
}

/** A preset's `plugins[3].parameters.x: …` as the place the user can change it: `strategy.plugins.<name>.x: …`. */
function strategyPath(line: string, spec: GraphSpec): string {
  return line.replace(/^plugins\[(\d+)\]\.parameters/, (all, i: string) => {
    const p = spec.plugins[Number(i)];
    return p === undefined ? all : `strategy.plugins.${p.name ?? p.type}`;
  });
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const child of Object.values(v)) deepFreeze(child);
  }
  return v;
}
