/**
 * The admin HTTP server: liveness (`/healthz`, up while the process serves), readiness
 * (`/readyz`, true only between a completed start and the beginning of a drain, so load
 * balancers stop sending before the ext_proc server stops), and a tiny route table other
 * parts register on (`/metrics`, `/debug/*`) without this file knowing about them.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../logging/logger.js';
import { parseListenAddress } from '../util/host-port.js';

/** Handles one admin request. `url` is parsed (path + query). May be async. */
export type AdminHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

interface Route {
  readonly method: string;
  /** Exact path, or a prefix when registered with a trailing `/*`. */
  readonly path: string;
  readonly prefix: boolean;
  readonly handler: AdminHandler;
}

export interface AdminServerOptions {
  /** `host:port`; port 0 picks a free port. */
  readonly address: string;
  readonly logger: Logger;
}

export class AdminServer {
  private readonly routes: Route[] = [];
  private server: Server | undefined;
  private ready = false;
  private boundPort: number | undefined;

  constructor(private readonly options: AdminServerOptions) {
    this.addRoute('GET', '/healthz', (_req, res) => sendText(res, 200, 'ok\n'));
    this.addRoute('GET', '/readyz', (_req, res) => (this.ready ? sendText(res, 200, 'ready\n') : sendText(res, 503, 'not ready\n')));
  }

  /**
   * Registers a handler. `path` is exact (`/metrics`) or a prefix ending in `/*`
   * (`/debug/*` matches `/debug/` and everything below). Exact routes win over prefixes;
   * a duplicate method+path is an error. HEAD is served by GET handlers.
   */
  addRoute(method: string, path: string, handler: AdminHandler): void {
    const m = method.toUpperCase();
    const prefix = path.endsWith('/*');
    const p = prefix ? path.slice(0, -1) : path;
    if (this.routes.some((r) => r.method === m && r.path === p && r.prefix === prefix)) {
      throw new Error(`admin route ${m} ${path} registered twice`);
    }
    this.routes.push({ method: m, path: p, prefix, handler });
  }

  setReady(ready: boolean): void {
    this.ready = ready;
  }

  isReady(): boolean {
    return this.ready;
  }

  get port(): number | undefined {
    return this.boundPort;
  }

  async start(): Promise<{ host: string; port: number }> {
    if (this.server) throw new Error('admin server already started');
    const { host, port } = parseListenAddress(this.options.address);
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.boundPort = (server.address() as AddressInfo).port;
    return { host, port: this.boundPort };
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.ready = false;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://admin');
    } catch {
      sendText(res, 400, 'bad request\n');
      return;
    }
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    const route = this.match(method, url.pathname);
    if (!route) {
      const other = this.routes.some((r) => matches(r, url.pathname));
      sendText(res, other ? 405 : 404, other ? 'method not allowed\n' : 'not found\n');
      return;
    }
    try {
      await route.handler(req, res, url);
    } catch (err) {
      this.options.logger.error('admin handler failed', {
        path: url.pathname,
        error: err instanceof Error ? err.message : String(err),
      });
      if (!res.headersSent) sendText(res, 500, 'internal error\n');
      else res.destroy();
    }
  }

  private match(method: string, path: string): Route | undefined {
    let best: Route | undefined;
    for (const r of this.routes) {
      if (r.method !== method || !matches(r, path)) continue;
      if (!r.prefix) return r;
      if (!best || r.path.length > best.path.length) best = r;
    }
    return best;
  }
}

function matches(r: Route, path: string): boolean {
  return r.prefix ? path.startsWith(r.path) : path === r.path;
}

export function sendText(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
