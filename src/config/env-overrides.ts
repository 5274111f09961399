/**
 * Environment variables that override single config fields, for containers where the
 * file is baked into an image but addresses and verbosity differ per deployment. They are
 * applied to the raw document before validation, so a bad value is reported like a bad
 * file value, naming the variable.
 */
export type Env = Readonly<Record<string, string | undefined>>;

export interface EnvOverride {
  readonly env: string;
  /** Section and field in the document. */
  readonly path: readonly [string, string] | readonly [string];
}

export const ENV_OVERRIDES: readonly EnvOverride[] = [
  { env: 'CACHEROUTE_GRPC_ADDRESS', path: ['server', 'grpcAddress'] },
  { env: 'CACHEROUTE_ADMIN_ADDRESS', path: ['server', 'adminAddress'] },
  { env: 'CACHEROUTE_LOG_LEVEL', path: ['telemetry', 'logLevel'] },
  { env: 'CACHEROUTE_STRATEGY', path: ['strategy'] },
  { env: 'CACHEROUTE_REPLICA_ID', path: ['replication', 'replicaId'] },
];

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Returns a copy of `doc` with overrides applied (the input is not modified) and, for each
 * overridden field path, the variable that set it. Empty variables count as unset.
 */
export function applyEnvOverrides(doc: unknown, env: Env): { doc: unknown; sources: Map<string, string> } {
  const sources = new Map<string, string>();
  if (!isMapping(doc)) return { doc, sources };
  const out: Record<string, unknown> = { ...doc };
  for (const o of ENV_OVERRIDES) {
    const value = env[o.env];
    if (value === undefined || value === '') continue;
    const [section, field] = o.path;
    if (field === undefined) {
      out[section] = value;
    } else {
      const current = out[section] ?? {};
      if (!isMapping(current)) continue; // the section itself is invalid; validation says so
      out[section] = { ...current, [field]: value };
    }
    sources.set(o.path.join('.'), o.env);
  }
  return { doc: out, sources };
}
