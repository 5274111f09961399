/**
 * Config reload: on SIGHUP or when the config file changes, the file is read and validated
 * as at start; a file that does not validate changes nothing (the running config stays, the
 * reason is logged and counted as `rejected`). A valid one is handed to the app, which
 * applies what can change safely at run time — the engine list (`endpoints`) and
 * `discovery` — and reports the other changed sections as needing a restart.
 *
 * The file is watched through its directory (so editors that write a new file and rename
 * it, and Kubernetes ConfigMap symlink swaps, are seen) plus a stat poll; reloads are
 * serialised, and a burst of events becomes one reload.
 */
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ReloadResult } from '../discovery/discovery-metrics.js';
import { RefreshLoop } from '../discovery/refresh-loop.js';
import type { RouterConfig } from '../config/types.js';

/** Sections the running router takes from a reloaded config. */
export const RELOADABLE_SECTIONS = ['endpoints', 'discovery'] as const;

export interface ReloadOutcome {
  readonly result: ReloadResult;
  /** Sections taken from the new file. */
  readonly applied: readonly string[];
  /** Sections that differ from the running config but only take effect after a restart. */
  readonly restartRequired: readonly string[];
  readonly error?: string;
}

/** Reload counts by result (read by the metrics). */
export class ReloadCounts {
  private readonly counts: Record<ReloadResult, number> = { applied: 0, rejected: 0, unchanged: 0 };
  record(result: ReloadResult): void {
    this.counts[result]++;
  }
  snapshot(): Readonly<Record<ReloadResult, number>> {
    return { ...this.counts };
  }
}

/** Top-level sections whose validated values differ. */
export function changedSections(a: RouterConfig, b: RouterConfig): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  const out: string[] = [];
  for (const k of keys) {
    if (JSON.stringify((a as unknown as Record<string, unknown>)[k]) !== JSON.stringify((b as unknown as Record<string, unknown>)[k]))
      out.push(k);
  }
  return out.sort();
}

export interface ReloadLog {
  info(msg: string, fields?: Record<string, string | number | boolean | undefined>): void;
  warn(msg: string, fields?: Record<string, string | number | boolean | undefined>): void;
}

export interface ConfigReloaderOptions {
  readonly path: string;
  /** Reads and validates the file (throws a RouterError BAD_CONFIG with every problem). */
  readonly load: (path: string) => RouterConfig;
  /** Applies the reloadable part of a valid config; returns what it applied. */
  readonly apply: (next: RouterConfig) => Promise<ReloadOutcome>;
  readonly counts: ReloadCounts;
  readonly log: ReloadLog;
  /** Watch the file (default true); SIGHUP works either way. */
  readonly watch?: boolean;
  /** Stat poll interval of the file watch (default 2000 ms). */
  readonly pollIntervalMs?: number;
}

export class ConfigReloader {
  private chain: Promise<unknown> = Promise.resolve();
  private watcher: FSWatcher | undefined;
  private readonly poll: RefreshLoop;
  private signature: string | undefined;
  private debounce: NodeJS.Timeout | undefined;

  constructor(private readonly opts: ConfigReloaderOptions) {
    this.poll = new RefreshLoop(opts.pollIntervalMs ?? 2000, () => this.checkFile());
  }

  /** Starts watching the file (when enabled). */
  async start(): Promise<void> {
    if (this.opts.watch === false) return;
    this.signature = await this.fileSignature();
    try {
      this.watcher = watch(dirname(this.opts.path), { persistent: false }, () => this.soon());
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch {
      this.watcher = undefined; // the poll still sees changes
    }
    this.poll.start();
  }

  async stop(): Promise<void> {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.debounce !== undefined) clearTimeout(this.debounce);
    await this.poll.stop();
    await this.chain;
  }

  /** Reloads now (SIGHUP, or a changed file). Serialised; never throws. */
  reload(trigger: 'signal' | 'file'): Promise<ReloadOutcome> {
    const run = this.chain.then(() => this.reloadOnce(trigger));
    this.chain = run.catch(() => {});
    return run;
  }

  private async reloadOnce(trigger: 'signal' | 'file'): Promise<ReloadOutcome> {
    const { log, counts } = this.opts;
    let next: RouterConfig;
    try {
      next = this.opts.load(this.opts.path);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      counts.record('rejected');
      log.warn('config reload rejected; the running config stays', { trigger, path: this.opts.path, error });
      return { result: 'rejected', applied: [], restartRequired: [], error };
    }
    let outcome: ReloadOutcome;
    try {
      outcome = await this.opts.apply(next);
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      counts.record('rejected');
      log.warn('config reload could not be applied; the running config stays', { trigger, path: this.opts.path, error });
      return { result: 'rejected', applied: [], restartRequired: [], error };
    }
    counts.record(outcome.result);
    const fields = { trigger, applied: outcome.applied.join(','), restart_required: outcome.restartRequired.join(',') };
    if (outcome.restartRequired.length > 0) log.warn('config reloaded; some changed sections need a restart to take effect', fields);
    else log.info(outcome.result === 'applied' ? 'config reloaded' : 'config reload: nothing to change', fields);
    return outcome;
  }

  /** Coalesces a burst of directory events into one check. */
  private soon(): void {
    if (this.debounce !== undefined) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.poll.kick();
    }, 50);
    this.debounce.unref();
  }

  private async checkFile(): Promise<void> {
    const sig = await this.fileSignature();
    if (sig === undefined || sig === this.signature) return;
    this.signature = sig;
    await this.reload('file');
  }

  private async fileSignature(): Promise<string | undefined> {
    try {
      const st = await stat(this.opts.path);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return undefined;
    }
  }
}
