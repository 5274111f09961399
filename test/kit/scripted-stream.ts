/**
 * A scripted ext_proc stream for handler tests: messages go in through the real protobuf
 * codec (so the handler sees grpc-js' decoded shapes), every answer is recorded decoded as
 * Envoy would read it, and lifecycle events (half-close, cancel, transport error) are
 * explicit calls. Synchronous and deterministic: no sockets, no timers.
 */
import type { EdgeContext } from '../../src/extproc/edge-context.js';
import type { ProcessStream } from '../../src/extproc/stream-env.js';
import type { StreamHandler } from '../../src/extproc/stream-handler.js';
import type { ProcessingRequest, ProcessingResponse, ProcessingResponse__Output } from '../../src/extproc/ext-proc-proto.js';
import { decodeAsClient, decodeAsServer } from './ext-proc-messages.js';

export class ScriptedStream implements ProcessStream {
  readonly written: ProcessingResponse__Output[] = [];
  ended = false;
  failed: { code: number; details: string } | undefined;
  /** Writes attempted after end()/fail() (must stay 0). */
  writesAfterClose = 0;

  constructor(private readonly metadata: Readonly<Record<string, string>> = {}) {}

  metadataValue(key: string): string | undefined {
    return this.metadata[key];
  }

  write(message: ProcessingResponse): void {
    if (this.ended || this.failed) this.writesAfterClose++;
    this.written.push(decodeAsClient(message));
  }

  end(): void {
    this.ended = true;
  }

  fail(code: number, details: string): void {
    this.failed = { code, details };
  }
}

export interface ScriptedSession {
  readonly stream: ScriptedStream;
  readonly handler: StreamHandler;
  /** Feeds messages in order; returns the answers written while handling them. */
  feed(...messages: ProcessingRequest[]): ProcessingResponse__Output[];
  halfClose(): void;
  cancel(): void;
  transportError(err?: Error): void;
}

export function openScripted(edge: EdgeContext, metadata: Readonly<Record<string, string>> = {}): ScriptedSession {
  const stream = new ScriptedStream(metadata);
  const handler = edge.open(stream);
  return {
    stream,
    handler,
    feed(...messages) {
      const before = stream.written.length;
      for (const m of messages) handler.onMessage(decodeAsServer(m));
      return stream.written.slice(before);
    },
    halfClose: () => handler.onHalfClose(),
    cancel: () => handler.onCancel(),
    transportError: (err = new Error('boom')) => handler.onTransportError(err),
  };
}
