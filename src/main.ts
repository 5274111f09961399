#!/usr/bin/env node
/**
 * The `cacheroute` command: process entry only (argv, signals, exit codes); everything
 * else lives in createRouterApp.
 *
 *   cacheroute serve --config <file>     run the router until SIGTERM/SIGINT
 *   cacheroute validate --config <file>  check a config file (and build its plugin graph) and exit
 *   cacheroute simulate --trace <file> --engines <n> [--config <file>]
 *                                        replay a traffic trace through the fleet simulator per
 *                                        strategy and recommend one (src/cli/simulate-command.ts)
 *   cacheroute pd-sidecar --decode <ip:port> [--listen <host:port>] [--connector shared-store|nixl]
 *                         [--allow-prefiller <ip:port>]...  the decode-side P/D sidecar (src/pd-sidecar/)
 *
 * `serve` prints exactly one JSON line on stdout when ready:
 *   {"event":"listening","grpc":"host:port","admin":"host:port","grpcPort":n,"adminPort":n}
 * On SIGTERM/SIGINT readiness turns false, open ext_proc streams get
 * server.drainTimeoutMs to finish, then the process exits 0. A second signal exits 1 at once.
 * On SIGHUP, and whenever the config file changes, the file is validated again and its
 * `endpoints` / `discovery` applied without a restart (src/compose/config-reloader.ts); an
 * invalid file leaves the running config in place.
 */
import { isRouterError } from './core/errors.js';
import { loadConfigFile } from './config/loader.js';
import { createRouterApp } from './compose/app.js';
import { createScheduler } from './compose/create-scheduler.js';
import { systemClock } from './util/clock.js';
import { seededRng } from './util/rng.js';
import type { RouterApp } from './compose/app.js';
import { ConfigReloader } from './compose/config-reloader.js';

const USAGE = `usage:
  cacheroute serve --config <file>
  cacheroute validate --config <file>
  cacheroute simulate --trace <file> --engines <n> [--config <file>] [--help for options]
  cacheroute pd-sidecar --decode <ip:port> [--listen <host:port>] [--connector shared-store|nixl]
                        [--prefill-timeout-ms <n>] [--allow-prefiller <ip:port>]...
`;

interface Args {
  readonly command: string;
  readonly config: string;
}

function parseArgs(argv: readonly string[]): Args | string {
  const [command, ...rest] = argv;
  if (command === undefined || command === '--help' || command === '-h') return USAGE;
  let config: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === '--config' || a === '-c') config = rest[++i];
    else if (a.startsWith('--config=')) config = a.slice('--config='.length);
    else return `unknown argument: ${a}\n${USAGE}`;
  }
  if (command !== 'serve' && command !== 'validate') return `unknown command: ${command}\n${USAGE}`;
  if (config === undefined || config === '') return `missing --config <file>\n${USAGE}`;
  return { command, config };
}

function printLine(value: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function serve(configPath: string): Promise<void> {
  const config = loadConfigFile(configPath);
  const app: RouterApp = createRouterApp(config);
  let stopping = false;

  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      app.logger.warn('second signal: exiting without drain', { signal });
      process.exit(1);
    }
    stopping = true;
    app.logger.info('shutting down', { signal, drain_ms: config.server.drainTimeoutMs });
    app
      .stop()
      .then(() => {
        printLine({ event: 'stopped', signal });
        process.exit(0);
      })
      .catch((err: unknown) => {
        app.logger.error('shutdown failed', { error: errorMessage(err) });
        process.exit(1);
      });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const reloader = new ConfigReloader({
    path: configPath,
    load: loadConfigFile,
    apply: (next) => app.reload(next),
    counts: app.reloads,
    log: app.logger.child({ component: 'config-reload' }),
  });
  process.on('SIGHUP', () => void reloader.reload('signal'));

  const addr = await app.start();
  if (stopping) return;
  await reloader.start();
  printLine({
    event: 'listening',
    grpc: addr.grpcAddress,
    admin: addr.adminAddress,
    grpcPort: addr.grpcPort,
    adminPort: addr.adminPort,
  });
}

/** Parses the file and builds the plugin graph once (every plugin factory runs), without listening. */
function validate(configPath: string): void {
  const config = loadConfigFile(configPath);
  createScheduler(config, { clock: systemClock, rng: seededRng(config.seed) }).stop();
  printLine({
    event: 'valid',
    config: configPath,
    strategy: config.strategy,
    profiles: config.schedulingProfiles.map((p) => p.name),
    plugins: config.plugins.length,
    endpoints: config.endpoints.length,
    grpc: config.server.grpcAddress,
    admin: config.server.adminAddress,
  });
}

/** `simulate`: the table on stdout (or JSON), one progress line per strategy on stderr. */
async function simulateCommand(argv: readonly string[]): Promise<number> {
  // Loaded only for this command: serving never pays for the simulator.
  const { parseSimulateArgs, runSimulate, formatSimulateResult, SIMULATE_USAGE } = await import('./cli/simulate-command.js');
  const args = parseSimulateArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(args);
    return args === SIMULATE_USAGE ? 0 : 64;
  }
  const result = runSimulate(args, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(args.json ? `${JSON.stringify(result, null, 2)}\n` : formatSimulateResult(result, args.trace));
  return 0;
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'simulate') {
    try {
      return await simulateCommand(argv.slice(1));
    } catch (err) {
      const code = isRouterError(err) ? err.code : 'INTERNAL';
      process.stderr.write(JSON.stringify({ event: 'error', code, error: errorMessage(err) }) + '\n');
      return code === 'BAD_CONFIG' ? 2 : 1;
    }
  }
  if (argv[0] === 'pd-sidecar') {
    const { runPdSidecar } = await import('./pd-sidecar/pd-sidecar-command.js');
    return runPdSidecar(argv.slice(1), USAGE);
  }
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(args);
    return args === USAGE ? 0 : 64;
  }
  try {
    if (args.command === 'validate') {
      validate(args.config);
      return 0;
    }
    await serve(args.config);
    return -1; // keep running until a signal
  } catch (err) {
    const code = isRouterError(err) ? err.code : 'INTERNAL';
    process.stderr.write(JSON.stringify({ event: 'error', code, error: errorMessage(err) }) + '\n');
    return code === 'BAD_CONFIG' ? 2 : 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(JSON.stringify({ event: 'error', code: 'INTERNAL', error: errorMessage(err) }) + '\n');
    process.exit(1);
  },
);
