/**
 * A small authoritative DNS server on UDP loopback for tests (dns-packet encodes and
 * decodes the wire format): answers A, AAAA and SRV from a table the test edits while it
 * runs, NXDOMAIN for unknown names, and counts queries.
 *
 *   const dns = await startDnsServer();            // 127.0.0.1:<free port>
 *   dns.set('engines.test', { A: ['127.0.0.2'] });
 *   systemResolver({ servers: [dns.address] })
 */
import { createSocket, type RemoteInfo } from 'node:dgram';
import * as packet from 'dns-packet';

export interface DnsRecords {
  readonly A?: readonly string[];
  readonly AAAA?: readonly string[];
  readonly SRV?: readonly { readonly target: string; readonly port: number; readonly priority?: number; readonly weight?: number }[];
}

export interface TestDnsServer {
  /** `127.0.0.1:<port>` for Resolver.setServers. */
  readonly address: string;
  set(name: string, records: DnsRecords): void;
  delete(name: string): void;
  /** When true every query is answered SERVFAIL. */
  failing: boolean;
  readonly queries: number;
  stop(): Promise<void>;
}

export async function startDnsServer(host = '127.0.0.1'): Promise<TestDnsServer> {
  const table = new Map<string, DnsRecords>();
  const sock = createSocket('udp4');
  let queries = 0;
  const server: TestDnsServer = {
    address: '',
    set: (name, records) => void table.set(name.toLowerCase(), records),
    delete: (name) => void table.delete(name.toLowerCase()),
    failing: false,
    get queries() {
      return queries;
    },
    stop: () => new Promise((resolve) => sock.close(() => resolve())),
  };

  sock.on('message', (msg: Buffer, rinfo: RemoteInfo) => {
    queries++;
    let q: packet.Packet;
    try {
      q = packet.decode(msg);
    } catch {
      return;
    }
    const question = q.questions?.[0];
    const base = { id: q.id ?? 0, type: 'response' as const, questions: q.questions ?? [] };
    let reply: packet.Packet;
    if (server.failing || question === undefined) {
      reply = { ...base, flags: packet.AUTHORITATIVE_ANSWER | 2 /* SERVFAIL */ };
    } else {
      const rec = table.get(question.name.toLowerCase());
      if (rec === undefined) {
        reply = { ...base, flags: packet.AUTHORITATIVE_ANSWER | 3 /* NXDOMAIN */ };
      } else {
        const answers: packet.Answer[] = [];
        if (question.type === 'A') for (const ip of rec.A ?? []) answers.push({ type: 'A', name: question.name, ttl: 1, data: ip });
        if (question.type === 'AAAA')
          for (const ip of rec.AAAA ?? []) answers.push({ type: 'AAAA', name: question.name, ttl: 1, data: ip });
        if (question.type === 'SRV') {
          for (const s of rec.SRV ?? []) {
            answers.push({
              type: 'SRV',
              name: question.name,
              ttl: 1,
              data: { target: s.target, port: s.port, priority: s.priority ?? 0, weight: s.weight ?? 0 },
            });
          }
        }
        reply = { ...base, flags: packet.AUTHORITATIVE_ANSWER, answers };
      }
    }
    sock.send(packet.encode(reply), rinfo.port, rinfo.address);
  });

  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(0, host, () => resolve());
  });
  (server as { address: string }).address = `${host}:${sock.address().port}`;
  return server;
}
