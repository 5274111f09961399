/**
 * Body chunk joining for FULL_DUPLEX_STREAMED: Envoy hands the request body over in chunks
 * (and drains each one), the router needs it whole to route, and must give every byte back.
 * The collector keeps the chunks under the body limit; `take` joins them once and cuts the
 * echo back along the chunks' own boundaries into as few messages as ECHO_MESSAGE_BYTES
 * allows. Why: Envoy usually sends a request as its data plus an empty end_of_stream chunk,
 * and every further message costs a write on each side before the engine has the request.
 */

/**
 * Largest body echo message built by joining Envoy's chunks (a chunk Envoy sent larger than
 * this goes back as it came, never split). A typical inference request fits in one; large
 * bodies still go back in pieces, as Envoy has refused single body responses of ~128 KB
 * (gateway-api-inference-extension issue 854, whose picker keeps them under 62,000 bytes).
 */
export const ECHO_MESSAGE_BYTES = 60 * 1024;

/**
 * Cuts the joined body back into pieces of at most `limit` bytes along the boundaries of the
 * chunks it came in (`chunkLengths`, in order), as views of `body` (no copy); empty chunks
 * add nothing, and a chunk longer than `limit` stays a piece of its own. An empty body gives
 * one empty piece (the end_of_stream message still has to go back).
 */
export function joinBodyChunks(body: Buffer, chunkLengths: readonly number[], limit: number): Buffer[] {
  const pieces: Buffer[] = [];
  let start = 0;
  let end = 0;
  for (const n of chunkLengths) {
    if (n === 0) continue;
    if (end - start + n > limit && end > start) {
      pieces.push(body.subarray(start, end));
      start = end;
    }
    end += n;
  }
  if (end > start) pieces.push(body.subarray(start, end));
  return pieces.length > 0 ? pieces : [body.subarray(0, 0)];
}

/** A whole body and the pieces that give it back to Envoy. */
export interface JoinedBody {
  readonly body: Buffer;
  readonly echo: readonly Buffer[];
}

/** The chunks of one request body, bounded by `maxBytes`. */
export class BodyCollector {
  private chunks: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** Adds a chunk; false (and nothing kept) once the body exceeds the limit. */
  push(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      this.clear();
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  /** The body so far, joined, with its echo pieces; the collector is empty afterwards. */
  take(): JoinedBody {
    const chunks = this.chunks;
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.bytes);
    this.chunks = [];
    this.bytes = 0;
    const echo =
      body.length <= ECHO_MESSAGE_BYTES
        ? [body]
        : joinBodyChunks(
            body,
            chunks.map((c) => c.length),
            ECHO_MESSAGE_BYTES,
          );
    return { body, echo };
  }

  /** Drops what was collected. */
  clear(): void {
    this.chunks = [];
    this.bytes = 0;
  }
}
