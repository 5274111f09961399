/**
 * One kept-alive HTTP/1.1 connection to one engine, for GETs of its metrics page.
 *
 * Why not node:http: a scrape through http.request (ClientRequest, IncomingMessage, agent
 * bookkeeping, stream events) cost the router about 0.3–0.5 ms of CPU for an 8 KB page, and
 * the router scrapes every engine 10 times a second; writing one fixed request and reading
 * the answer straight off the socket costs about a fifth of that. The exchange is the
 * narrowest HTTP there is: one GET at a time, no request body, status 200 or an error.
 *
 * Response reading: status line and headers up to 16 KiB; a body framed by Content-Length,
 * by chunked transfer encoding (chunk extensions and trailers skipped) or, without either,
 * by the connection closing. Bodies are cut at `maxBytes` (the connection is then dropped:
 * the rest is never read). Any other status than 200, a malformed answer, a timeout or a
 * cut body closes the connection; the next GET connects afresh. A kept connection the
 * engine closed just as it was reused (reset or closed before any byte of the answer) is
 * retried once on a fresh connection, so idle-connection timeouts never read as failures;
 * a refused connect still reads as one.
 */
import net from 'node:net';

export type PageResult = { ok: true; body: Buffer; truncated: boolean } | { ok: false; reason: string };

const MAX_HEAD_BYTES = 16 * 1024;
const CRLFCRLF = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');

type Framing = { kind: 'length'; remaining: number } | { kind: 'chunked' } | { kind: 'close' };

/** Parsed status line and the headers that frame the body. */
interface Head {
  readonly status: number;
  readonly framing: Framing;
  readonly keepAlive: boolean;
}

/** Reads the head (without the final CRLFCRLF); undefined when malformed. */
export function parseHead(text: string): Head | undefined {
  const lines = text.split('\r\n');
  const m = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
  if (m === null) return undefined;
  const http10 = m[1] === '0';
  const status = Number(m[2]);
  let length: number | undefined;
  let chunked = false;
  let connection = '';
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string;
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-length') {
      if (!/^\d{1,15}$/.test(value) || (length !== undefined && length !== Number(value))) return undefined;
      length = Number(value);
    } else if (name === 'transfer-encoding') {
      chunked = value
        .toLowerCase()
        .split(',')
        .map((x) => x.trim())
        .includes('chunked');
      if (!chunked) return undefined; // gzip etc.: asked for identity
    } else if (name === 'connection') {
      connection = value.toLowerCase();
    }
  }
  const framing: Framing = chunked ? { kind: 'chunked' } : length !== undefined ? { kind: 'length', remaining: length } : { kind: 'close' };
  const keepAlive = framing.kind !== 'close' && !connection.includes('close') && (!http10 || connection.includes('keep-alive'));
  return { status, framing, keepAlive };
}

/** The GET in progress: what the socket's (permanent) listeners hand their events to. */
interface Exchange {
  readonly socket: net.Socket;
  onData(d: Buffer): void;
  onError(err: NodeJS.ErrnoException): void;
  onClose(): void;
}

export class PageConnection {
  private socket: net.Socket | undefined;
  private current: Exchange | undefined;
  private readonly request: Buffer;
  private busy = false;
  private closed = false;
  /** Ends the GET in progress (stop()). */
  private abortCurrent: (() => void) | undefined;

  constructor(
    private readonly host: string,
    private readonly port: number,
    path: string,
  ) {
    const authority = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    this.request = Buffer.from(
      `GET ${path} HTTP/1.1\r\nHost: ${authority}\r\nAccept: text/plain\r\nAccept-Encoding: identity\r\n\r\n`,
      'latin1',
    );
  }

  /** One GET of the page. Never rejects; one at a time (a second call while busy fails). */
  async get(timeoutMs: number, maxBytes: number): Promise<PageResult> {
    if (this.closed) return { ok: false, reason: 'aborted' };
    if (this.busy) return { ok: false, reason: 'busy' };
    this.busy = true;
    try {
      const deadline = performance.now() + timeoutMs;
      const reused = this.socket !== undefined;
      const first = await this.exchange(deadline, maxBytes);
      if (first.retry && reused && !this.closed) return (await this.exchange(deadline, maxBytes)).result;
      return first.result;
    } finally {
      this.busy = false;
    }
  }

  /** Closes the connection and ends a GET in progress with `aborted`. */
  close(): void {
    this.closed = true;
    this.abortCurrent?.();
    this.drop();
  }

  private drop(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  /**
   * A new socket whose listeners stay for its lifetime (adding and removing a 'data' listener
   * per GET pauses and resumes the socket each time: two extra epoll calls per scrape).
   */
  private connect(): net.Socket {
    const s = net.connect({ host: this.host, port: this.port });
    s.setNoDelay(true);
    const mine = (): Exchange | undefined => (this.current?.socket === s ? this.current : undefined);
    s.on('data', (d: Buffer) => mine()?.onData(d));
    s.on('error', (err: NodeJS.ErrnoException) => mine()?.onError(err));
    s.on('close', () => {
      // Closed by the engine while idle: forget it (the next GET connects afresh).
      if (this.socket === s) this.socket = undefined;
      mine()?.onClose();
    });
    return s;
  }

  /** One request/response on the kept (or a new) socket; `retry` when a reused one died before answering. */
  private exchange(deadline: number, maxBytes: number): Promise<{ result: PageResult; retry: boolean }> {
    return new Promise((resolve) => {
      const reused = this.socket !== undefined;
      const s = this.socket ?? this.connect();
      this.socket = s;
      let settled = false;
      let gotBytes = false;
      let head: Head | undefined;
      let pending: Buffer = Buffer.alloc(0);
      const body: Buffer[] = [];
      let bodyBytes = 0;
      /** Chunked: bytes left in the current chunk, or -1 while reading a size line, -2 in trailers. */
      let chunkLeft = -1;

      const finish = (result: PageResult, keep: boolean, retry = false): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (this.current === exchange) this.current = undefined;
        this.abortCurrent = undefined;
        if (!keep || !result.ok) {
          if (this.socket === s) this.socket = undefined;
          s.destroy();
        }
        resolve({ result, retry });
      };
      const fail = (reason: string): void => finish({ ok: false, reason }, false);
      const complete = (): void =>
        finish(
          { ok: true, body: body.length === 1 ? (body[0] as Buffer) : Buffer.concat(body, bodyBytes), truncated: false },
          head?.keepAlive === true,
        );
      const addBody = (b: Buffer): boolean => {
        if (bodyBytes + b.length > maxBytes) {
          body.push(b.subarray(0, maxBytes - bodyBytes));
          const all = Buffer.concat(body);
          // Drop the last partial line so a cut number is never read as a smaller one.
          finish({ ok: true, body: all.subarray(0, all.lastIndexOf(10) + 1), truncated: true }, false);
          return false;
        }
        if (b.length > 0) {
          body.push(b);
          bodyBytes += b.length;
        }
        return true;
      };

      /** Consumes `pending` as far as it goes; false once the exchange has ended. */
      const advance = (): boolean => {
        if (head === undefined) {
          const end = pending.indexOf(CRLFCRLF);
          if (end < 0) {
            if (pending.length > MAX_HEAD_BYTES) fail('bad response: head too long');
            return !settled;
          }
          head = parseHead(pending.subarray(0, end).toString('latin1'));
          if (head === undefined) {
            fail('bad response');
            return false;
          }
          if (head.status !== 200) {
            // A 408 on a kept connection is the engine timing it out just before our GET.
            finish({ ok: false, reason: `http ${head.status}` }, false, head.status === 408 && reused);
            return false;
          }
          pending = pending.subarray(end + 4);
        }
        const f = head.framing;
        if (f.kind === 'close') {
          const ok = addBody(pending);
          pending = Buffer.alloc(0);
          return ok;
        }
        if (f.kind === 'length') {
          const take = Math.min(f.remaining, pending.length);
          if (!addBody(pending.subarray(0, take))) return false;
          f.remaining -= take;
          pending = pending.subarray(take);
          if (f.remaining === 0) {
            complete();
            return false;
          }
          return true;
        }
        for (;;) {
          if (chunkLeft > 0) {
            const take = Math.min(chunkLeft, pending.length);
            if (!addBody(pending.subarray(0, take))) return false;
            chunkLeft -= take;
            pending = pending.subarray(take);
            if (chunkLeft > 0) return true;
            chunkLeft = 0; // the CRLF after the chunk
          }
          const eol = pending.indexOf(CRLF);
          if (eol < 0) {
            if (pending.length > MAX_HEAD_BYTES) fail('bad response: chunk line too long');
            return !settled;
          }
          const line = pending.subarray(0, eol).toString('latin1');
          pending = pending.subarray(eol + 2);
          if (chunkLeft === 0) {
            if (line !== '') {
              fail('bad response: chunk not followed by CRLF');
              return false;
            }
            chunkLeft = -1;
          } else if (chunkLeft === -2) {
            if (line === '') {
              complete();
              return false;
            }
          } else {
            const size = /^([0-9a-fA-F]{1,12})(?:[ \t]*;.*)?$/.exec(line);
            if (size === null) {
              fail('bad response: chunk size');
              return false;
            }
            const n = parseInt(size[1] as string, 16);
            chunkLeft = n === 0 ? -2 : n;
          }
        }
      };
      const onData = (d: Buffer): void => {
        gotBytes = true;
        pending = pending.length === 0 ? d : Buffer.concat([pending, d]);
        advance();
      };
      const onError = (err: NodeJS.ErrnoException): void => {
        if (this.closed) {
          fail('aborted');
          return;
        }
        const early = reused && !gotBytes && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
        finish({ ok: false, reason: err.message }, false, early);
      };
      const onClose = (): void => {
        if (this.closed) fail('aborted');
        else if (head !== undefined && head.framing.kind === 'close') complete();
        else finish({ ok: false, reason: 'connection closed' }, false, reused && !gotBytes);
      };
      const timer = setTimeout(() => fail('timeout'), Math.max(0, deadline - performance.now()));
      this.abortCurrent = () => fail('aborted');
      const exchange: Exchange = { socket: s, onData, onError, onClose };
      this.current = exchange;
      s.write(this.request);
    });
  }
}
