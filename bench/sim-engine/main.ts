/**
 * Entry point: `node dist/bench/sim-engine/main.js [flags]` (see engine-config.ts and
 * docs/sim-engine.md). Starts one engine per port and prints one JSON line per engine on
 * stdout when it listens: {"event":"listening","port":N,"id":"...","url":"..."}.
 * SIGTERM/SIGINT (or stdin closing, with --exit-on-stdin-close) stop it gracefully.
 */
import { FlagError, parseSimEngineArgs } from './engine-config.js';
import { SimEngineServer } from './http-server.js';

async function main(): Promise<void> {
  let args: ReturnType<typeof parseSimEngineArgs>;
  try {
    args = parseSimEngineArgs(process.argv.slice(2));
  } catch (err) {
    if (err instanceof FlagError) {
      process.stderr.write(`sim-engine: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const servers = args.engines.map((cfg) => new SimEngineServer(cfg));
  let stopping = false;
  const shutdown = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(JSON.stringify({ event: 'stopping', reason }) + '\n');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    Promise.all(servers.map((s) => s.stop(3_000))).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  if (args.engines.some((e) => e.exitOnStdinClose)) {
    process.stdin.on('end', () => shutdown('stdin closed'));
    process.stdin.on('error', () => shutdown('stdin error'));
    process.stdin.resume();
  }

  for (const s of servers) {
    try {
      const { port, id, url } = await s.start();
      process.stdout.write(JSON.stringify({ event: 'listening', port, id, url }) + '\n');
    } catch (err) {
      process.stderr.write(`sim-engine: cannot listen: ${err instanceof Error ? err.message : String(err)}\n`);
      await Promise.all(servers.map((x) => x.stop(0)));
      process.exit(1);
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`sim-engine: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
