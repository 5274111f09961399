import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { TraceFile } from '../../../src/traffic-trace/trace-file.js';

describe('traffic-trace file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trace-file-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const line = (i: number): string => `${JSON.stringify({ i, pad: 'x'.repeat(40) })}\n`;

  it('appends queued lines on flush, in order', async () => {
    const path = join(dir, 't.jsonl');
    const f = new TraceFile({ path, maxFileBytes: 1 << 20, maxFiles: 2, flushIntervalMs: 1000, maxQueuedBytes: 1 << 20 });
    for (let i = 0; i < 5; i++) expect(f.append(line(i))).to.equal('queued');
    expect(existsSync(path)).to.equal(false);
    await f.flush();
    expect(readFileSync(path, 'utf8')).to.equal([0, 1, 2, 3, 4].map(line).join(''));
    expect(f.stats()).to.include({ written: 5, dropped: 0, queuedBytes: 0 });
  });

  it('rotates at maxFileBytes and keeps at most maxFiles files', async () => {
    const path = join(dir, 't.jsonl');
    const size = Buffer.byteLength(line(0));
    const f = new TraceFile({ path, maxFileBytes: 3 * size, maxFiles: 3, flushIntervalMs: 1000, maxQueuedBytes: 1 << 20 });
    const results = Array.from({ length: 12 }, (_, i) => f.append(line(i)));
    expect(results.filter((r) => r === 'rotated')).to.have.length(4);
    expect(results[2]).to.equal('rotated');
    await f.stop();
    // Files of 3 lines each; after the 4th rotation 9-11 is path.1, 6-8 path.2, older ones deleted.
    expect(readFileSync(`${path}.1`, 'utf8')).to.equal([9, 10, 11].map(line).join(''));
    expect(readFileSync(`${path}.2`, 'utf8')).to.equal([6, 7, 8].map(line).join(''));
    expect(existsSync(`${path}.3`)).to.equal(false);
    expect(existsSync(path)).to.equal(false); // the last line closed its file
    expect(f.stats().rotations).to.equal(4);
  });

  it('rotates a file left by an earlier run away before writing', async () => {
    const path = join(dir, 't.jsonl');
    writeFileSync(path, 'old\n');
    const f = new TraceFile({ path, maxFileBytes: 1 << 20, maxFiles: 2, flushIntervalMs: 1000, maxQueuedBytes: 1 << 20 });
    f.append(line(1));
    await f.stop();
    expect(readFileSync(`${path}.1`, 'utf8')).to.equal('old\n');
    expect(readFileSync(path, 'utf8')).to.equal(line(1));
  });

  it('drops lines beyond maxQueuedBytes instead of growing', async () => {
    const path = join(dir, 't.jsonl');
    const size = Buffer.byteLength(line(0));
    const f = new TraceFile({ path, maxFileBytes: 1 << 20, maxFiles: 1, flushIntervalMs: 1000, maxQueuedBytes: 2 * size });
    expect([0, 1, 2, 3].map((i) => f.append(line(i)))).to.deep.equal(['queued', 'queued', 'dropped', 'dropped']);
    await f.flush();
    expect(f.append(line(4))).to.equal('queued');
    await f.stop();
    expect(readFileSync(path, 'utf8')).to.equal([0, 1, 4].map(line).join(''));
    expect(f.stats().dropped).to.equal(2);
  });

  it('reports a failed write and keeps running', async () => {
    const errors: unknown[] = [];
    const f = new TraceFile({
      path: join(dir, 'missing-dir', 't.jsonl'),
      maxFileBytes: 1 << 20,
      maxFiles: 1,
      flushIntervalMs: 1000,
      maxQueuedBytes: 1 << 20,
      onError: (e) => errors.push(e),
    });
    f.append(line(0));
    await f.stop();
    expect(errors).to.have.length(1);
    expect(f.stats().writeErrors).to.equal(1);
  });
});
