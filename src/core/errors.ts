/**
 * The one error type of the router, with a closed set of codes. Codes are mapped to
 * HTTP and gRPC statuses in one table at the edge (src/extproc/), nowhere else.
 */
export type ErrorCode =
  | 'BAD_REQUEST' // client body/headers cannot be routed as an inference request
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA' // e.g. compressed body the router will not inflate
  | 'NO_ENDPOINT' // nothing eligible (empty pool / subset)
  | 'OVERLOADED' // refused by admission control (src/admission/), 429 + Retry-After
  | 'PRECONDITION_FAILED' // `Prefer: if-available` and the decode engine does not hold the prompt (412)
  | 'BAD_CONFIG'
  | 'PROTOCOL' // peer broke the ext_proc conversation rules
  | 'INTERNAL';

export class RouterError extends Error {
  override readonly name = 'RouterError';
  /** OVERLOADED: when the client may try again (the edge sends it as `Retry-After`). */
  readonly retryAfterMs?: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(message, options);
    if (options?.retryAfterMs !== undefined) this.retryAfterMs = options.retryAfterMs;
  }

  /** Wraps anything thrown into a RouterError (INTERNAL unless it already is one). */
  static from(err: unknown): RouterError {
    if (err instanceof RouterError) return err;
    const msg = err instanceof Error ? err.message : String(err);
    return new RouterError('INTERNAL', msg, { cause: err });
  }
}

export function isRouterError(err: unknown, code?: ErrorCode): err is RouterError {
  return err instanceof RouterError && (code === undefined || err.code === code);
}
