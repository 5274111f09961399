/**
 * A watched endpoint file (YAML or JSON): a list of entries, or `{ endpoints: [...] }`,
 * each `"host:port"` or `{ address: "host:port", models: [...], role: prefill|decode|both }`
 * (hosts may be names, resolved like the static list). An entry without a role gets the
 * source's `role` (default: none, which means both).
 *
 * A role change in the file is a membership update of that engine (same index, new role).
 *
 * Reload is atomic from the router's side: the whole file is read and validated before the
 * set changes, and a file that fails (unreadable, not YAML, a bad entry, empty because a
 * writer truncated it) changes nothing — the last good set stays and the reason is logged
 * and counted. Writers should still replace the file by rename. Changes are seen through a
 * directory watch (which also catches renames and Kubernetes ConfigMap symlink swaps) and,
 * as a fallback for file systems without events, a stat poll every `pollIntervalMs`.
 */
import { watch, type FSWatcher } from 'node:fs';
import { ENGINE_ROLES, type EngineRole } from '../core/types.js';
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parse } from 'yaml';
import { EntryResolver, parseHostPort, type EndpointEntry } from './endpoint-entry.js';
import { errorText, SourceBase, type SourceLog } from './endpoint-source.js';
import type { HostResolver } from './host-resolver.js';
import { RefreshLoop } from './refresh-loop.js';

export interface FileSourceOptions {
  readonly path: string;
  readonly resolver: HostResolver;
  /** Stat poll (and host-name re-resolution) interval. */
  readonly pollIntervalMs: number;
  readonly log: SourceLog;
  /** Role of entries that name none. */
  readonly role?: EngineRole;
}

/** Parses the file's text; returns entries or a reason (with the entry's position). */
export function parseEndpointFile(text: string, defaultRole?: EngineRole): EndpointEntry[] | string {
  if (text.trim() === '') return 'empty file';
  let doc: unknown;
  try {
    doc = parse(text, { uniqueKeys: true });
  } catch (err) {
    return `not YAML/JSON: ${errorText(err).split('\n')[0]}`;
  }
  const list = isRecord(doc) && 'endpoints' in doc ? doc['endpoints'] : doc;
  if (!Array.isArray(list)) return 'expected a list of endpoints (or {endpoints: [...]})';
  const out: EndpointEntry[] = [];
  for (let i = 0; i < list.length; i++) {
    const item: unknown = list[i];
    const at = `endpoints[${i}]`;
    const raw = typeof item === 'string' ? { address: item } : item;
    if (!isRecord(raw)) return `${at}: expected "host:port" or {address, models, role}`;
    const extra = Object.keys(raw).filter((k) => k !== 'address' && k !== 'models' && k !== 'role');
    if (extra.length > 0) return `${at}: unknown field "${extra[0]}"`;
    if (typeof raw['address'] !== 'string') return `${at}.address: required string "host:port"`;
    const hp = parseHostPort(raw['address']);
    if (typeof hp === 'string') return `${at}.address "${raw['address']}": ${hp}`;
    const models = raw['models'];
    if (models !== undefined && !(Array.isArray(models) && models.every((m) => typeof m === 'string' && m !== ''))) {
      return `${at}.models: expected a list of model names`;
    }
    const role = raw['role'] ?? defaultRole;
    if (role !== undefined && !(ENGINE_ROLES as readonly unknown[]).includes(role))
      return `${at}.role: expected one of ${ENGINE_ROLES.join(', ')}`;
    out.push({
      host: hp.host,
      port: hp.port,
      ...(models !== undefined ? { models: models as string[] } : {}),
      ...(role !== undefined ? { role: role as EngineRole } : {}),
    });
  }
  return out;
}

export class FileSource extends SourceBase {
  readonly kind = 'file';
  private readonly loop: RefreshLoop;
  private readonly names: EntryResolver;
  private watcher: FSWatcher | undefined;
  private signature: string | undefined;
  private entries: EndpointEntry[] | undefined;
  /** The file as it is now failed validation (the last good entries are still used). */
  private badFile = false;

  constructor(private readonly opts: FileSourceOptions) {
    super(`file:${opts.path}`, opts.log);
    this.names = new EntryResolver(opts.resolver);
    this.loop = new RefreshLoop(opts.pollIntervalMs, () => this.refresh());
  }

  start(signal: AbortSignal): void {
    try {
      // Any change in the directory may be ours (rename into place, ConfigMap ..data swap);
      // a round only re-reads the file when its stat signature changed.
      this.watcher = watch(dirname(this.opts.path), { persistent: false }, () => this.loop.kick());
      this.watcher.on('error', () => this.closeWatcher());
    } catch {
      this.watcher = undefined; // no directory (yet): the poll still finds the file later
    }
    this.loop.start(signal);
  }

  async stop(): Promise<void> {
    this.closeWatcher();
    await this.loop.stop();
  }

  /** Re-reads the file if it changed (and re-resolves host names). Tests call it directly. */
  async refresh(): Promise<void> {
    let sig: string;
    try {
      const st = await stat(this.opts.path);
      sig = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch (err) {
      this.signature = undefined;
      this.fail(isNotFound(err) ? 'missing' : 'read', errorText(err));
      return;
    }
    if (sig !== this.signature) {
      let text: string;
      try {
        text = await readFile(this.opts.path, 'utf8');
      } catch (err) {
        this.fail(isNotFound(err) ? 'missing' : 'read', errorText(err));
        return;
      }
      this.signature = sig;
      const parsed = parseEndpointFile(text, this.opts.role);
      this.badFile = typeof parsed === 'string';
      if (typeof parsed === 'string') {
        this.fail('parse', parsed);
        return;
      }
      this.entries = parsed;
    }
    if (this.entries === undefined) return; // only bad versions seen so far
    const { endpoints, failures } = await this.names.resolve(this.entries);
    this.publish(endpoints);
    if (failures.length > 0) this.fail('resolve', failures.join('; '));
    else if (!this.badFile) this.recovered();
  }

  private closeWatcher(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 'ENOENT';
}
