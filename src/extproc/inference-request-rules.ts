/**
 * Which requests the router decides for, and which of those it refuses before parsing.
 * An inference request is a configured method + exact path (query string ignored); every
 * other request passes through untouched. Refusals (documented in docs/extproc.md):
 * explicit non-JSON content type → 415, any content-encoding other than identity → 415
 * (the router does not inflate bodies: it would cost CPU and memory on the hot path and
 * open a decompression-bomb hole), declared content-length above the limit → 413.
 */
import { RouterError } from '../core/errors.js';
import type { RequestsConfig } from '../request/requests-config.js';
import type { HeaderLookup } from './header-map.js';

export class InferenceMatcher {
  private readonly paths: ReadonlySet<string>;
  private readonly methods: ReadonlySet<string>;

  constructor(requests: Pick<RequestsConfig, 'paths' | 'methods'>) {
    this.paths = new Set(requests.paths);
    this.methods = new Set(requests.methods.map((m) => m.toUpperCase()));
  }

  matches(method: string, path: string): boolean {
    return this.methods.has(method.toUpperCase()) && this.paths.has(pathWithoutQuery(path));
  }
}

/** `:path` without `?query` or `#fragment`. */
export function pathWithoutQuery(path: string): string {
  let end = path.length;
  const q = path.indexOf('?');
  if (q >= 0) end = q;
  const h = path.indexOf('#');
  if (h >= 0 && h < end) end = h;
  return end === path.length ? path : path.slice(0, end);
}

/** True for application/json, text/json and any `+json` suffix type; parameters ignored. */
export function isJsonMediaType(contentType: string): boolean {
  const media = (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();
  return media === 'application/json' || media === 'text/json' || media.endsWith('+json');
}

/**
 * Checks an inference request's headers; returns the error to answer with, or undefined.
 */
export function checkInferenceHeaders(headers: HeaderLookup, maxBodyBytes: number): RouterError | undefined {
  const contentType = headers.get('content-type');
  if (contentType !== undefined && contentType.trim() !== '' && !isJsonMediaType(contentType)) {
    return new RouterError('UNSUPPORTED_MEDIA', 'content-type must be application/json');
  }
  const encoding = headers.get('content-encoding');
  if (encoding !== undefined) {
    for (const token of encoding.split(',')) {
      const t = token.trim().toLowerCase();
      if (t !== '' && t !== 'identity') {
        return new RouterError('UNSUPPORTED_MEDIA', `content-encoding ${t} is not supported (the router does not inflate bodies)`);
      }
    }
  }
  const length = headers.get('content-length');
  if (length !== undefined && /^\d+$/.test(length.trim()) && Number(length.trim()) > maxBodyBytes) {
    return new RouterError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxBodyBytes} bytes`);
  }
  return undefined;
}
