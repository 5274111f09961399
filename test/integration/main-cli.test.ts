/**
 * The `cacheroute` CLI as a child process: serve prints the listening line, answers
 * health checks and exits 0 after draining on SIGTERM; validate checks config files.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, open } from '../kit/ext-proc-client.js';
import { chatBody, kindOf, requestBody, requestHeaders } from '../kit/ext-proc-messages.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

interface Run {
  child: ChildProcess;
  stdout: string[];
  stderr: string;
  exit: Promise<number | null>;
}

function run(args: string[]): Run {
  const child = spawn(process.execPath, [MAIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, OTEL_SDK_DISABLED: 'true' },
  });
  const r: Run = { child, stdout: [], stderr: '', exit: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      r.stdout.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (r.stderr += d.toString()));
  return r;
}

async function lineMatching(r: Run, pred: (v: Record<string, unknown>) => boolean, timeoutMs = 10000): Promise<Record<string, unknown>> {
  const start = Date.now();
  for (;;) {
    for (const l of r.stdout) {
      try {
        const v = JSON.parse(l) as Record<string, unknown>;
        if (pred(v)) return v;
      } catch {
        /* not JSON */
      }
    }
    if (Date.now() - start > timeoutMs) throw new Error(`no matching stdout line; stderr: ${r.stderr}`);
    if (r.child.exitCode !== null) throw new Error(`exited ${r.child.exitCode}; stderr: ${r.stderr}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

describe('integration: cacheroute CLI', function () {
  this.timeout(30000);
  let dir: string;
  const runs: Run[] = [];

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'cacheroute-cli-'));
    writeFileSync(
      join(dir, 'ok.yaml'),
      'apiVersion: cacheroute/v1\nserver:\n  grpcAddress: 127.0.0.1:0\n  adminAddress: 127.0.0.1:0\n  drainTimeoutMs: 5000\nendpoints:\n  - 127.0.0.1:8001\n  - 127.0.0.1:8002\nengineMetrics:\n  enabled: false\ntelemetry:\n  logLevel: error\n',
    );
    writeFileSync(join(dir, 'bad.yaml'), 'apiVersion: cacheroute/v1\nendpoints: []\nstrategy: nonsense\n');
  });
  after(() => {
    for (const r of runs) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('serve: prints the listening line, serves health and ext_proc, drains and exits 0 on SIGTERM', async () => {
    const r = run(['serve', '--config', join(dir, 'ok.yaml')]);
    runs.push(r);
    const listening = await lineMatching(r, (v) => v['event'] === 'listening');
    expect(listening['grpc']).to.match(/^127\.0\.0\.1:\d+$/);
    const adminPort = listening['adminPort'] as number;
    expect((await fetch(`http://127.0.0.1:${adminPort}/healthz`)).status).to.equal(200);
    expect((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status).to.equal(200);
    const client = connect(listening['grpcPort'] as number);
    const c = open(client);
    c.send(requestHeaders({ requestBodyMode: 'FULL_DUPLEX_STREAMED' }), requestBody(chatBody('cli'), true));
    const out = await c.waitFor(2);
    expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    c.cancel();
    client.close();
    r.child.kill('SIGTERM');
    expect(await r.exit).to.equal(0);
    expect(r.stdout.filter((l) => l.includes('"event":"listening"'))).to.have.length(1);
    await lineMatching(r, (v) => v['event'] === 'stopped');
  });

  it('validate: exit 0 with a summary for a good file, 2 with field errors for a bad one, 64 for bad usage', async () => {
    const ok = run(['validate', '--config', join(dir, 'ok.yaml')]);
    runs.push(ok);
    expect(await ok.exit, ok.stderr).to.equal(0);
    expect(JSON.parse(ok.stdout[0]!)).to.deep.include({ event: 'valid', endpoints: 2 });
    const bad = run(['validate', `--config=${join(dir, 'bad.yaml')}`]);
    runs.push(bad);
    expect(await bad.exit, bad.stderr).to.equal(2);
    expect(bad.stderr).to.contain('BAD_CONFIG');
    expect(bad.stderr).to.contain('strategy');
    const usage = run(['serve']);
    runs.push(usage);
    expect(await usage.exit).to.equal(64);
    expect(usage.stderr).to.contain('usage:');
  });
});
