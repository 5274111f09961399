/**
 * A real grpc-js ext_proc client playing Envoy's side of one stream, for integration
 * tests: send ProcessingRequests, await the answers in order, cancel (as Envoy does at the
 * end of every request) or half-close, and observe the final gRPC status.
 */
import * as grpc from '@grpc/grpc-js';
import { createExtProcClient } from '../../src/extproc/ext-proc-proto.js';
import type { ExternalProcessorClient, ProcessingRequest, ProcessingResponse__Output } from '../../src/extproc/ext-proc-proto.js';

export class ClientConversation {
  private readonly received: ProcessingResponse__Output[] = [];
  private waiters: { n: number; resolve: () => void; reject: (e: Error) => void; timer: NodeJS.Timeout }[] = [];
  private status: grpc.StatusObject | undefined;
  readonly finished: Promise<grpc.StatusObject>;

  constructor(readonly call: grpc.ClientDuplexStream<ProcessingRequest, ProcessingResponse__Output>) {
    call.on('data', (m: ProcessingResponse__Output) => {
      this.received.push(m);
      this.wake();
    });
    this.finished = new Promise((resolve) => {
      call.on('status', (s: grpc.StatusObject) => {
        this.status = s;
        this.wake();
        resolve(s);
      });
    });
    call.on('error', () => {
      /* surfaced through 'status' */
    });
  }

  get all(): readonly ProcessingResponse__Output[] {
    return this.received;
  }

  send(...messages: ProcessingRequest[]): void {
    for (const m of messages) this.call.write(m);
  }

  /** Resolves once `total` answers have arrived in all (not just new ones). */
  async waitFor(total: number, timeoutMs = 5000): Promise<ProcessingResponse__Output[]> {
    if (this.received.length < total) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${total} answers (have ${this.received.length})`)),
          timeoutMs,
        );
        this.waiters.push({ n: total, resolve, reject, timer });
        this.wake();
      });
    }
    return this.received.slice(0, total);
  }

  cancel(): void {
    this.call.cancel();
  }

  halfClose(): void {
    this.call.end();
  }

  private wake(): void {
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (this.received.length >= w.n) {
        clearTimeout(w.timer);
        w.resolve();
      } else if (this.status !== undefined) {
        clearTimeout(w.timer);
        w.reject(new Error(`stream ended (${this.status.code} ${this.status.details}) with ${this.received.length} of ${w.n} answers`));
      } else still.push(w);
    }
    this.waiters = still;
  }
}

export function connect(port: number): ExternalProcessorClient {
  return createExtProcClient(`127.0.0.1:${port}`);
}

export function open(client: ExternalProcessorClient, metadata: Record<string, string> = {}): ClientConversation {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new ClientConversation(client.Process(md));
}

/** Polls `cond` every few ms until true or the bound expires (event-driven state on another side of a socket). */
export async function eventually(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
