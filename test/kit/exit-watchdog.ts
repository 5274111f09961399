/**
 * Mocha root hook (loaded by .mocharc.json): the suite must end by itself, so mocha runs
 * without `exit: true`. If the process is still alive a while after the last test, a
 * handle leaked (an open server or socket, a timer, an unreaped child): print what is
 * still active, so the leak can be found, and exit non-zero instead of hanging.
 */
const GRACE_MS = Number(process.env['CACHEROUTE_TEST_EXIT_GRACE_MS'] ?? 15_000);

function describeHandle(h: unknown): string {
  const o = h as {
    constructor?: { name?: string };
    localPort?: number;
    remotePort?: number;
    remoteAddress?: string;
    pid?: number;
    spawnargs?: string[];
    address?: () => unknown;
  };
  const kind = o.constructor?.name ?? typeof h;
  if (kind === 'ChildProcess') return `${kind} pid ${o.pid}: ${(o.spawnargs ?? []).join(' ').slice(0, 160)}`;
  if (kind === 'Server' && typeof o.address === 'function') return `${kind} listening on ${JSON.stringify(o.address())}`;
  if (o.localPort !== undefined) return `${kind} 127.0.0.1:${o.localPort} -> ${o.remoteAddress}:${o.remotePort}`;
  return kind;
}

export const mochaHooks = {
  afterAll(): void {
    const timer = setTimeout(() => {
      const handles = (process as unknown as { _getActiveHandles(): unknown[] })
        ._getActiveHandles()
        .filter((h) => h !== process.stdout && h !== process.stderr && h !== process.stdin);
      process.stderr.write(
        `\nthe test process is still alive ${GRACE_MS} ms after the last test: leaked handles keep it running\n` +
          `  active resources: ${process.getActiveResourcesInfo().join(', ')}\n` +
          handles.map((h) => `  - ${describeHandle(h)}\n`).join(''),
      );
      // mocha's own exit listener sets the exit code from the test results; this one runs later.
      process.on('exit', () => {
        process.exitCode = 3;
      });
      process.exit(3);
    }, GRACE_MS);
    timer.unref();
  },
};
