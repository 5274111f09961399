/**
 * One streaming OpenAI request (completions or chat) with the timings a router benchmark
 * needs: time to the first chunk that carries generated text (TTFT) and to the end of the
 * stream (end-to-end), plus the usage block (cached_tokens) and the engine that served it
 * (`x-engine-id`). Never throws: every way a request can end becomes an outcome value, so
 * failures are counted rather than lost.
 */
import { type Agent, request as rawRequest } from 'node:http';
import { DECISION_HEADER } from '../../src/extproc/decision-header.js';

export type ApiKind = 'completions' | 'chat';

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  /** Assistant tool calls (OpenAI shape); the arguments are a JSON string. */
  readonly tool_calls?: ReadonlyArray<{
    readonly id: string;
    readonly type: 'function';
    readonly function: { readonly name: string; readonly arguments: string };
  }>;
  /** Tool results: the call they answer. */
  readonly tool_call_id?: string;
}

/** What a streamed request needs: the API, its prompt or conversation, output tokens, session. */
export interface StreamedRequest {
  readonly api: ApiKind;
  /** Prompt text (completions API). */
  readonly prompt?: string;
  /** Conversation (chat API). */
  readonly messages?: readonly ChatMessage[];
  /** Output tokens requested (sent as max_tokens with ignore_eos). */
  readonly maxTokens: number;
  /** Conversation / agent session the request belongs to (sent as the `x-session-id` header). */
  readonly session?: string;
}

export type Outcome =
  | 'ok'
  | 'http-error' // non-2xx status (includes sheds: 429/503)
  | 'stream-error' // 200 but the stream carried an error event, or no text at all
  | 'incomplete' // connection closed before the end of the stream
  | 'timeout' // per-request or run deadline
  | 'network-error' // could not connect / reset before a response
  | 'not-sent'; // the run ended before this request's (dependent) turn came

export interface StreamResult {
  readonly outcome: Outcome;
  readonly status: number;
  readonly engine: string | null;
  /** The router's `x-cacheroute-decision` response header, when it sets one. */
  readonly decision: string | null;
  /** ms since the request was written, or null if no text arrived. */
  readonly ttftMs: number | null;
  readonly e2eMs: number | null;
  readonly outputTokens: number;
  readonly promptTokens: number | null;
  readonly cachedTokens: number | null;
  /** Generated text (kept only if asked, for tests); never logged. */
  readonly text?: string;
  /** Short description of what went wrong (status line, error type); no prompt text. */
  readonly error: string | null;
}

export interface StreamRequestOptions {
  readonly baseUrl: string;
  readonly model: string;
  readonly timeoutMs: number;
  readonly agent: Agent;
  readonly signal?: AbortSignal;
  readonly headers?: Readonly<Record<string, string>>;
  readonly keepText?: boolean;
  /** Clock for timings (ms); default performance.now. */
  readonly now?: () => number;
  /**
   * Send the body as a proxy that streams it does: chunked (no content-length), the headers
   * first and the body in a later write (default false: content-length, one write).
   */
  readonly chunkedBody?: boolean;
}

/** Header carrying a request's session (the fallback hash of the shipped Envoy configs). */
export const SESSION_HEADER = 'x-session-id';

export function requestBody(req: StreamedRequest, model: string): Record<string, unknown> {
  const common = {
    model,
    max_tokens: req.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
    ignore_eos: true,
    temperature: 0,
  };
  return req.api === 'chat' ? { ...common, messages: req.messages } : { ...common, prompt: req.prompt };
}

export function requestPath(req: StreamedRequest): string {
  return req.api === 'chat' ? '/v1/chat/completions' : '/v1/completions';
}

interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

/** Incremental SSE parser state for one response. */
export class SseAccumulator {
  private buf = '';
  done = false;
  textChunks = 0;
  text = '';
  usage: Usage | undefined;
  errorEvent: string | undefined;
  firstTextAt: number | undefined;

  constructor(private readonly keepText: boolean) {}

  /** Feeds raw body text; `at` is the arrival time of this chunk. */
  push(chunk: string, at: number): void {
    this.buf += chunk;
    for (;;) {
      const m = /\r?\n\r?\n/.exec(this.buf);
      if (!m) break;
      const event = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.onEvent(event, at);
    }
  }

  private onEvent(event: string, at: number): void {
    let data = '';
    for (const line of event.split(/\r?\n/)) {
      if (line.startsWith('data:')) data += line.slice(line.charAt(5) === ' ' ? 6 : 5);
    }
    if (data === '') return;
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(data) as Record<string, unknown>;
    } catch {
      this.errorEvent ??= 'unparseable SSE event';
      return;
    }
    if (obj['error'] !== undefined) {
      const e = obj['error'] as { message?: unknown; type?: unknown } | string;
      this.errorEvent ??= typeof e === 'string' ? e.slice(0, 120) : String(e.type ?? e.message ?? 'error').slice(0, 120);
      return;
    }
    const choices = obj['choices'];
    if (Array.isArray(choices)) {
      for (const c of choices as Array<Record<string, unknown>>) {
        const delta = c['delta'] as Record<string, unknown> | undefined;
        const piece =
          typeof c['text'] === 'string' ? c['text'] : typeof delta?.['content'] === 'string' ? (delta['content'] as string) : '';
        if (piece.length > 0) {
          this.textChunks++;
          this.firstTextAt ??= at;
          if (this.keepText) this.text += piece;
        }
      }
    }
    if (obj['usage'] !== undefined && obj['usage'] !== null) this.usage = obj['usage'] as Usage;
  }
}

/** Sends one request and waits for the stream to end; resolves to a result, never rejects. */
export function streamRequest(req: StreamedRequest, opts: StreamRequestOptions): Promise<StreamResult> {
  const now = opts.now ?? ((): number => performance.now());
  const body = JSON.stringify(requestBody(req, opts.model));
  const url = new URL(requestPath(req), opts.baseUrl);
  return new Promise((resolve) => {
    const start = now();
    const acc = new SseAccumulator(opts.keepText ?? false);
    let status = 0;
    let engine: string | null = null;
    let decision: string | null = null;
    let settled = false;
    let errorText = '';
    const finish = (outcome: Outcome, error: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      const end = now();
      const usage = acc.usage;
      const cached = usage?.prompt_tokens_details?.cached_tokens;
      const result: StreamResult = {
        outcome,
        status,
        engine,
        decision,
        ttftMs: acc.firstTextAt === undefined ? null : acc.firstTextAt - start,
        e2eMs: outcome === 'ok' ? end - start : null,
        outputTokens: usage?.completion_tokens ?? acc.textChunks,
        promptTokens: usage?.prompt_tokens ?? null,
        cachedTokens: typeof cached === 'number' ? cached : null,
        error,
        ...(opts.keepText ? { text: acc.text } : {}),
      };
      resolve(result);
    };
    const httpReq = rawRequest(url, {
      method: 'POST',
      agent: opts.agent,
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...(opts.chunkedBody === true ? { 'transfer-encoding': 'chunked' } : { 'content-length': Buffer.byteLength(body) }),
        ...(req.session !== undefined ? { [SESSION_HEADER]: req.session } : {}),
        ...opts.headers,
      },
    });
    const timer = setTimeout(() => {
      finish('timeout', `no complete response after ${opts.timeoutMs} ms`);
      httpReq.destroy();
    }, opts.timeoutMs);
    const onAbort = (): void => {
      finish('timeout', 'run deadline reached');
      httpReq.destroy();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    httpReq.once('error', (err: NodeJS.ErrnoException) => {
      finish(status === 0 ? 'network-error' : 'incomplete', err.code ?? err.message.slice(0, 120));
    });
    httpReq.once('response', (res) => {
      status = res.statusCode ?? 0;
      const e = res.headers['x-engine-id'];
      engine = (Array.isArray(e) ? e[0] : e) ?? null;
      const d = res.headers[DECISION_HEADER];
      decision = (Array.isArray(d) ? d[0] : d) ?? null;
      res.setEncoding('utf8');
      const ok = status >= 200 && status < 300;
      res.on('data', (chunk: string) => {
        if (ok) acc.push(chunk, now());
        else if (errorText.length < 200) errorText += chunk;
      });
      res.once('error', (err: NodeJS.ErrnoException) => finish('incomplete', err.code ?? 'response error'));
      res.once('aborted', () => finish('incomplete', 'response aborted'));
      res.once('end', () => {
        if (!ok) return finish('http-error', `HTTP ${status}${errorText ? ': ' + summarizeError(errorText) : ''}`);
        if (acc.errorEvent !== undefined) return finish('stream-error', acc.errorEvent);
        if (!acc.done && acc.usage === undefined) return finish('incomplete', 'stream ended without [DONE]');
        if (acc.firstTextAt === undefined) return finish('stream-error', 'no generated text');
        finish('ok', null);
      });
    });
    if (opts.chunkedBody === true) {
      httpReq.flushHeaders();
      setImmediate(() => httpReq.end(body));
    } else httpReq.end(body);
  });
}

/** A short, prompt-free description of an error body (JSON error message or first words). */
function summarizeError(body: string): string {
  try {
    const o = JSON.parse(body) as { error?: { message?: string; type?: string } | string; message?: string };
    const m = typeof o.error === 'string' ? o.error : (o.error?.type ?? o.error?.message ?? o.message);
    if (m) return String(m).slice(0, 80);
  } catch {
    // not JSON
  }
  return body.replace(/\s+/g, ' ').slice(0, 80);
}
