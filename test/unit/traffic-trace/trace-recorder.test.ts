import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { RequestOutcome, RouteRequest } from '../../../src/core/types.js';
import { TraceFile } from '../../../src/traffic-trace/trace-file.js';
import type { AppendResult } from '../../../src/traffic-trace/trace-file.js';
import { parseTrace } from '../../../src/traffic-trace/trace-format.js';
import { TraceRecorder, type TraceRecorderOptions, type TraceSink } from '../../../src/traffic-trace/trace-recorder.js';
import { seededRng } from '../../../src/util/rng.js';
import { SECRET_PROMPT, sampleDecision, secretRequest, text } from '../builders.js';

/** Collects lines; `rotateAt` makes the n-th append report a rotation. */
class Lines implements TraceSink {
  readonly lines: string[] = [];
  constructor(private readonly rotateAt = new Set<number>()) {}
  append(line: string): AppendResult {
    this.lines.push(line);
    return this.rotateAt.has(this.lines.length) ? 'rotated' : 'queued';
  }
  start(): void {}
  async stop(): Promise<void> {}
  stats() {
    return { written: this.lines.length, dropped: 0, rotations: 0, writeErrors: 0, queuedBytes: 0 };
  }
}

function recorder(sink: TraceSink, over: Partial<TraceRecorderOptions> = {}): TraceRecorder {
  return new TraceRecorder({
    sink,
    sampleRate: 1,
    blockTokens: 4, // 16 characters at 4 chars/token
    charsPerToken: 4,
    maxPrefixChars: 4096,
    maxBlockKeys: 10_000,
    maxInFlight: 1000,
    rng: seededRng(1),
    ...over,
  });
}

const decision = sampleDecision();
const routed = (r: TraceRecorder, request: RouteRequest): void =>
  r.listener({ kind: 'routed', request, decision, timings: [], routeMicros: 1 });
const finished = (r: TraceRecorder, request: RouteRequest, outcome: RequestOutcome): void =>
  r.listener({ kind: 'finished', request, decision, outcome, durationMs: 1 });

describe('traffic-trace recorder', () => {
  it('writes one line per finished request: arrival from the first, shared prefix ids, engine token counts', () => {
    const sink = new Lines();
    const r = recorder(sink);
    const system = text(1, 32); // two 16-character blocks
    const a: RouteRequest = secretRequest({ requestId: 'a', prefix: system + text(2, 16), promptTokens: 12, arrivalMs: 1000 });
    const b: RouteRequest = secretRequest({
      requestId: 'b',
      prefix: system + text(3, 20),
      promptTokens: 13,
      arrivalMs: 1250,
      stream: true,
    });
    routed(r, a);
    routed(r, b);
    finished(r, b, { aborted: false, status: 200, promptTokens: 13, completionTokens: 40 });
    expect(sink.lines).to.have.length(1); // a is still in flight
    finished(r, a, { aborted: false, status: 200, responseBytes: 332 + 10 + 4 * 25 });
    const [eb, ea] = parseTrace(sink.lines.join(''))
      .sort((x, y) => x.inputTokens - y.inputTokens)
      .reverse();
    expect(ea).to.deep.equal({
      atMs: 0,
      inputTokens: 12,
      outputTokens: 25,
      outputEstimated: true,
      blockIds: [0, 1, 3], // numbered in the file's order: b's line came first
      blockTokens: 4,
      model: 'llama-3-8b',
    });
    expect(eb).to.deep.include({ atMs: 250, inputTokens: 13, outputTokens: 40, blockIds: [0, 1, 2] });
    expect(eb!.outputEstimated).to.equal(undefined);
    expect(r.stats()).to.include({ sampled: 2, recorded: 2, inFlight: 0 });
  });

  it('writes no prompt text, no hash of it and no request identity to the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trace-priv-'));
    try {
      const path = join(dir, 't.jsonl');
      const r = recorder(new TraceFile({ path, maxFileBytes: 1 << 20, maxFiles: 1, flushIntervalMs: 1000, maxQueuedBytes: 1 << 20 }));
      for (let i = 0; i < 50; i++) {
        const req = secretRequest({
          requestId: `req-secret-${i}`,
          prefix: `${SECRET_PROMPT} ${SECRET_PROMPT} turn ${i % 5}`,
          sessionKey: 'session-hunter2',
          tenant: 'tenant-zorblax',
          arrivalMs: i * 10,
        });
        routed(r, req);
        finished(r, req, { aborted: false, status: 200, completionTokens: 7, servedBy: '127.0.0.1:8001' });
      }
      await r.stop();
      const file = readFileSync(path, 'utf8');
      expect(file.split('\n').filter((l) => l !== '')).to.have.length(50);
      // No 5-character window of the prompt (letters only, so JSON keys cannot match by chance).
      const words = SECRET_PROMPT.match(/[A-Za-z]{5,}/g)!;
      for (const w of words) expect(file, w).not.to.contain(w);
      for (const s of ['hunter2', 'req-secret', 'session', 'tenant', 'zorblax', '127.0.0.1', '8001'])
        expect(file.toLowerCase()).not.to.contain(s);
      for (const line of file.trim().split('\n')) {
        const o = JSON.parse(line) as Record<string, unknown>;
        expect(Object.keys(o).sort()).to.deep.equal(['block_tokens', 'hash_ids', 'input_length', 'model', 'output_length', 'timestamp']);
        // Ids are small per-trace integers, not hashes.
        for (const id of o['hash_ids'] as number[]) expect(id).to.be.below(1000);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('samples about sampleRate of the requests, reproducibly from its seed', () => {
    const run = (): number => {
      const sink = new Lines();
      const r = recorder(sink, { sampleRate: 0.25, rng: seededRng(9) });
      for (let i = 0; i < 2000; i++) {
        const req = secretRequest({ requestId: `q${i}`, prefix: `${i} ${SECRET_PROMPT}`, arrivalMs: i });
        routed(r, req);
        finished(r, req, { aborted: false, completionTokens: 1 });
      }
      return sink.lines.length;
    };
    const n = run();
    expect(n).to.be.within(430, 570);
    expect(run()).to.equal(n);
  });

  it('starts ids and timestamps afresh after its file rotates', () => {
    const sink = new Lines(new Set([1]));
    const r = recorder(sink);
    const p = text(4, 32);
    const first = secretRequest({ requestId: 'x', prefix: `${text(5, 16)}${p}`, promptTokens: 12, arrivalMs: 100 });
    const second = secretRequest({ requestId: 'y', prefix: p, promptTokens: 8, arrivalMs: 300 });
    routed(r, first);
    finished(r, first, { aborted: false, completionTokens: 1 });
    routed(r, second);
    finished(r, second, { aborted: false, completionTokens: 1 });
    expect(parseTrace(sink.lines[0]!)[0]!.blockIds).to.deep.equal([0, 1, 2]);
    expect(JSON.parse(sink.lines[1]!)).to.deep.include({ timestamp: 0, hash_ids: [0, 1] });
  });

  it('holds at most maxInFlight sampled requests; one that never finishes is not written', () => {
    const sink = new Lines();
    const r = recorder(sink, { maxInFlight: 2 });
    const reqs = [0, 1, 2].map((i) => secretRequest({ requestId: `z${i}`, arrivalMs: i }));
    for (const q of reqs) routed(r, q);
    expect(r.stats()).to.include({ sampled: 2, skippedBusy: 1, inFlight: 2 });
    finished(r, reqs[2]!, { aborted: false, completionTokens: 1 });
    finished(r, reqs[0]!, { aborted: true });
    expect(sink.lines).to.have.length(1);
    expect(JSON.parse(sink.lines[0]!)).to.include({ output_length: 0 });
  });
});
