/**
 * `cacheroute pd-sidecar` argv handling and process lifecycle: prints one JSON line
 * `{"event":"listening","port":n}` when ready, stops on SIGTERM/SIGINT.
 */
import { createLogger } from '../logging/logger.js';
import { PD_CONNECTORS, PD_SIDECAR_DEFAULTS, PdSidecar, type PdConnector } from './pd-sidecar.js';

/** Runs the sidecar; resolves -1 while it runs (exit on signal), or an exit code for bad arguments. */
export async function runPdSidecar(argv: readonly string[], usage: string): Promise<number> {
  let listen = '127.0.0.1:0';
  let decode: string | undefined;
  let connector: PdConnector = 'shared-store';
  let prefillTimeoutMs: number = PD_SIDECAR_DEFAULTS.prefillTimeoutMs;
  const allowed: string[] = [];
  const bad = (msg: string): number => {
    process.stderr.write(`${msg}\n${usage}`);
    return 64;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[i + 1];
    if (v === undefined) return bad(`missing value for ${a}`);
    i++;
    if (a === '--listen') listen = v;
    else if (a === '--decode') decode = v;
    else if (a === '--connector') {
      if (!(PD_CONNECTORS as readonly string[]).includes(v)) return bad(`--connector: expected one of ${PD_CONNECTORS.join(', ')}`);
      connector = v as PdConnector;
    } else if (a === '--prefill-timeout-ms') {
      prefillTimeoutMs = Number(v);
      if (!Number.isInteger(prefillTimeoutMs) || prefillTimeoutMs < 1) return bad('--prefill-timeout-ms: expected a positive integer');
    } else if (a === '--allow-prefiller') allowed.push(v);
    else return bad(`unknown argument: ${a}`);
  }
  if (decode === undefined) return bad('missing --decode <ip:port>');
  const logger = createLogger({ level: 'info' });
  let sidecar: PdSidecar;
  try {
    sidecar = new PdSidecar({ ...PD_SIDECAR_DEFAULTS, listen, decode, connector, prefillTimeoutMs, allowedPrefillers: allowed, logger });
  } catch (err) {
    return bad(err instanceof Error ? err.message : String(err));
  }
  const port = await sidecar.start();
  process.stdout.write(JSON.stringify({ event: 'listening', port, decode, connector }) + '\n');
  const stop = (): void => {
    void sidecar.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return -1;
}
