/**
 * Plays a misbehaving Envoy against the router's ext_proc port: opens streams, sends the
 * request headers (and a whole or partial chat body) in FULL_DUPLEX_STREAMED mode, then
 * goes silent without ending them; or sends a body before any headers (a protocol
 * violation). What a vanished client or a broken proxy leaves behind.
 */
import * as grpc from '@grpc/grpc-js';
import { createExtProcClient, type ExternalProcessorClient, type ProcessingRequest } from '../../src/extproc/ext-proc-proto.js';

export interface AbandonedStream {
  /** Resolves when the router answered the first message or ended the stream. */
  readonly answeredOrEnded: Promise<void>;
  cancel(): void;
}

function inferenceHeaders(requestId: string): ProcessingRequest {
  const h: Record<string, string> = {
    ':method': 'POST',
    ':path': '/v1/chat/completions',
    ':authority': 'gateway',
    ':scheme': 'http',
    'content-type': 'application/json',
    'x-request-id': requestId,
  };
  return {
    request_headers: {
      headers: { headers: Object.entries(h).map(([key, v]) => ({ key, raw_value: Buffer.from(v, 'utf8') })) },
      end_of_stream: false,
    },
    protocol_config: { request_body_mode: 'FULL_DUPLEX_STREAMED', response_body_mode: 'FULL_DUPLEX_STREAMED' },
  };
}

const body = (text: string, endOfStream: boolean): ProcessingRequest => ({
  request_body: { body: Buffer.from(text, 'utf8'), end_of_stream: endOfStream },
});

export class AbandoningClient {
  private readonly client: ExternalProcessorClient;

  constructor(address: string) {
    this.client = createExtProcClient(address);
  }

  /** `complete`: the whole body (the router decides); otherwise the upload stops halfway. */
  abandon(requestId: string, complete: boolean): AbandonedStream {
    const call = this.client.Process(new grpc.Metadata());
    const answeredOrEnded = new Promise<void>((resolve) => {
      call.once('data', () => resolve());
      call.once('status', () => resolve());
      call.on('error', () => resolve());
    });
    call.write(inferenceHeaders(requestId));
    const chat = JSON.stringify({
      model: 'sim-model',
      messages: [{ role: 'user', content: `abandoned prompt ${requestId} ${'y'.repeat(800)}` }],
      stream: true,
    });
    call.write(complete ? body(chat, true) : body(chat.slice(0, 20), false));
    return { answeredOrEnded, cancel: () => call.cancel() };
  }

  /** A body before any headers; half-closes. Resolves when the router ended the stream (or after 2 s). */
  protocolViolation(): Promise<void> {
    const call = this.client.Process(new grpc.Metadata());
    const ended = new Promise<void>((resolve) => {
      call.once('status', () => resolve());
      call.on('error', () => resolve());
      setTimeout(resolve, 2000).unref();
    });
    call.write(body('x', true));
    call.end();
    return ended;
  }

  close(): void {
    this.client.close();
  }
}
