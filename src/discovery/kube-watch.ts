/**
 * A self-healing list+watch of one Kubernetes collection (`@kubernetes/client-node`'s
 * ListWatch underneath), reporting the whole cached collection after every change.
 *
 * The client's informer stops for good on the first error (API server restarting, network
 * gone, 403): here an error schedules a fresh informer (full list, then watch) after an
 * exponential backoff. Every `resyncMs` the informer is replaced the same way, so drift from
 * a lost event cannot persist. Errors of an informer this class stopped itself (the client reports its
 * own abort as "The user aborted a request.") are ignored. While the API server is away the
 * last reported collection simply stays.
 */
import { ListWatch, Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from '@kubernetes/client-node';

export interface KubeWatchOptions<T extends KubernetesObject> {
  readonly kubeConfig: KubeConfig;
  /** API path of the collection, e.g. `/api/v1/namespaces/ns/pods`. */
  readonly path: string;
  /** The list call matching `path` and the selectors. */
  readonly list: () => Promise<KubernetesListObject<T>>;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly resyncMs: number;
  /** First retry delay after an error (doubles up to `maxBackoffMs`). */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  /** A list that takes longer than this counts as failed. */
  readonly listTimeoutMs?: number;
  /** The whole collection, after the initial list and after every change. */
  readonly onItems: (items: readonly T[]) => void;
  readonly onError: (message: string) => void;
}

export class KubeWatch<T extends KubernetesObject> {
  private informer: ListWatch<T> | undefined;
  private generation = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = true;
  private notifyQueued = false;

  constructor(private readonly opts: KubeWatchOptions<T>) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimers();
    await this.dropInformer();
  }

  private connect(): void {
    if (this.stopped) return;
    const gen = ++this.generation;
    const o = this.opts;
    const timeoutMs = o.listTimeoutMs ?? 10_000;
    const list = (): Promise<KubernetesListObject<T>> => withTimeout(o.list(), timeoutMs);
    const informer = new ListWatch<T>(o.path, new Watch(o.kubeConfig), list, false, o.labelSelector, o.fieldSelector);
    const current = (): boolean => gen === this.generation && !this.stopped;
    const changed = (): void => {
      if (current()) this.queueNotify(informer);
    };
    informer.on('add', changed);
    informer.on('update', changed);
    informer.on('delete', changed);
    informer.on('error', (err: unknown) => {
      if (current()) this.failed(errMessage(err));
    });
    this.informer = informer;
    informer.start().then(
      () => {
        if (!current()) return;
        this.failures = 0;
        this.queueNotify(informer);
        this.scheduleResync();
      },
      (err: unknown) => {
        if (current()) this.failed(errMessage(err));
      },
    );
  }

  /** One report per burst of events (a relist adds every object one by one). */
  private queueNotify(informer: ListWatch<T>): void {
    if (this.notifyQueued) return;
    this.notifyQueued = true;
    queueMicrotask(() => {
      this.notifyQueued = false;
      if (this.informer === informer && !this.stopped) this.opts.onItems(informer.list());
    });
  }

  private failed(message: string): void {
    this.opts.onError(message);
    this.clearTimers();
    void this.dropInformer();
    const base = this.opts.backoffMs ?? 250;
    const delay = Math.min(this.opts.maxBackoffMs ?? 5_000, base * 2 ** Math.min(this.failures, 10));
    this.failures++;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  private scheduleResync(): void {
    if (this.resyncTimer !== undefined) clearTimeout(this.resyncTimer);
    this.resyncTimer = setTimeout(() => {
      this.resyncTimer = undefined;
      void this.dropInformer().then(() => this.connect());
    }, this.opts.resyncMs);
    this.resyncTimer.unref();
  }

  private async dropInformer(): Promise<void> {
    const old = this.informer;
    this.informer = undefined;
    this.generation++;
    await old?.stop().catch(() => {});
  }

  private clearTimers(): void {
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    if (this.resyncTimer !== undefined) clearTimeout(this.resyncTimer);
    this.retryTimer = undefined;
    this.resyncTimer = undefined;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`list timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function errMessage(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { statusCode?: unknown; code?: unknown }).statusCode ?? (err as { code?: unknown }).code;
    return code !== undefined ? `${err.message} (${String(code)})` : err.message;
  }
  return String(err);
}
