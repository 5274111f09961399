/**
 * Runs an async refresh now and then every `intervalMs` until stopped, never two at once
 * (a slow DNS answer delays the next round instead of piling rounds up). `kick()` runs one
 * round as soon as the current one (if any) ends — for file-change events.
 */
export class RefreshLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly intervalMs: number,
    private readonly refresh: () => Promise<void>,
  ) {}

  start(signal?: AbortSignal): void {
    if (!this.stopped) return;
    this.stopped = false;
    signal?.addEventListener('abort', () => void this.stop(), { once: true });
    this.kick();
  }

  /** One round as soon as possible. */
  kick(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.refresh()
      .catch(() => {})
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.kick();
          return;
        }
        this.timer = setTimeout(() => this.kick(), this.intervalMs);
        this.timer.unref();
      });
  }

  /** Cancels the timer and waits for a round in progress. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
