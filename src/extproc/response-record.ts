/**
 * What one stream saw of a routed request's response: its status, which engine served it
 * (Envoy reports it after retries in `metadata_context`), the engine's own token counts
 * (sniffed from the body's tail, usage-sniffer.ts) and how far it got. Why a record of its
 * own: the completion mode (completion-mode.ts) needs exactly these facts when the response
 * ends, and the phase machine only has to say which message arrived.
 */
import type { RouteTicket } from '../core/routing-service.js';
import type { ResponseEnd, ResponseFacts } from './completion-mode.js';
import type { BodySendMode, Metadata__Output } from './ext-proc-proto.js';
import { readServedEndpoint } from './lb-metadata.js';
import { UsageSniffer } from './usage-sniffer.js';

export class ResponseRecord {
  private status: number | undefined;
  private headersSeen = false;
  private bodySeen = false;
  private completed = false;
  private servedBy: string | undefined;
  private sniffer: UsageSniffer | undefined;
  private firstByteReported = false;

  /** Response headers or body already arrived (headers may not follow). */
  get started(): boolean {
    return this.headersSeen || this.bodySeen;
  }

  /** The whole response arrived. */
  get ended(): boolean {
    return this.completed;
  }

  /** The response headers (`:status`); `ticket` undefined for requests not routed. */
  headers(status: string | undefined, metadata: Metadata__Output | null | undefined, ticket: RouteTicket | undefined): void {
    this.headersSeen = true;
    const code = Number(status);
    if (Number.isInteger(code) && code > 0) this.status = code;
    this.noteServed(metadata, ticket);
  }

  /**
   * A response body chunk. The first byte (for SSE: the first token) ends the request's
   * prefill in the core's accounting; response headers do not, engines send them before the
   * first token.
   */
  body(chunk: Buffer, metadata: Metadata__Output | null | undefined, ticket: RouteTicket | undefined): void {
    this.bodySeen = true;
    this.noteServed(metadata, ticket);
    if (ticket === undefined) return;
    this.sniffer ??= new UsageSniffer();
    this.sniffer.push(chunk);
    if (!this.firstByteReported && chunk.length > 0) {
      this.firstByteReported = true;
      ticket.firstByte?.();
    }
  }

  /** The response is complete (end_of_stream, or trailers). */
  complete(): void {
    this.completed = true;
  }

  /**
   * How far the response got. Without response body messages (body mode NONE) seeing the
   * headers is the most a stream can know, and seeing nothing says nothing (`unseen`).
   */
  end(responseBodyMode: BodySendMode): ResponseEnd {
    if (this.completed) return 'complete';
    if (responseBodyMode !== 'NONE' || this.bodySeen) return 'cut';
    return this.headersSeen ? 'headers-only' : 'unseen';
  }

  /** The facts for the ticket's outcome (reads the sniffed usage once). */
  facts(): ResponseFacts {
    const usage = this.sniffer?.result();
    this.sniffer = undefined;
    return {
      status: this.status,
      promptTokens: usage?.promptTokens,
      cachedTokens: usage?.cachedTokens,
      completionTokens: usage?.completionTokens,
      servedBy: this.servedBy,
    };
  }

  private noteServed(metadata: Metadata__Output | null | undefined, ticket: RouteTicket | undefined): void {
    if (ticket !== undefined && this.servedBy === undefined) this.servedBy = readServedEndpoint(metadata);
  }
}
