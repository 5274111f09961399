import { expect } from 'chai';
import fc from 'fast-check';
import { RouterError } from '../../../src/core/errors.js';
import { extractPrompt, type ExtractedPrompt } from '../../../src/request/extract-prompt.js';
import { bytes } from './body-helpers.js';

const PATHS = ['/v1/chat/completions', '/v1/completions', '/other'];
const SEED = 20250611;

/** Runs the extractor; returns the result or the RouterError, failing on anything else. */
function run(path: string, body: Uint8Array, maxPrefixChars: number): ExtractedPrompt | RouterError {
  try {
    const r = extractPrompt(path, body, { maxPrefixChars, charsPerToken: 4 });
    expect(r.prefix.length).to.be.at.most(maxPrefixChars);
    expect(r.promptChars).to.be.at.least(r.prefix.length);
    expect(Number.isInteger(r.promptTokens) && r.promptTokens >= 0).to.equal(true);
    return r;
  } catch (err) {
    if (!(err instanceof RouterError)) throw err;
    expect(err.code).to.equal('BAD_REQUEST');
    return err;
  }
}

const text = fc.string({ unit: 'binary', maxLength: 40 });
const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: text }) }),
  fc.record({ type: fc.constant('input_audio'), input_audio: fc.record({ data: text }) }),
  fc.record({ type: text, x: fc.jsonValue({ maxDepth: 2 }) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const message = fc.record(
  {
    role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer'), text, fc.integer()),
    content: fc.oneof(text, fc.array(part, { maxLength: 4 }), fc.constant(null), fc.jsonValue({ maxDepth: 2 })),
    name: text,
    tool_call_id: text,
    tool_calls: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 2 }),
  },
  { requiredKeys: ['role'] },
);
const chatBody = fc.record(
  {
    model: fc.oneof(text, fc.jsonValue({ maxDepth: 1 })),
    messages: fc.array(message, { maxLength: 5 }),
    tools: fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 3 }),
    max_tokens: fc.oneof(fc.nat(), fc.integer(), fc.double()),
    stream: fc.oneof(fc.boolean(), fc.jsonValue({ maxDepth: 1 })),
  },
  { requiredKeys: [] },
);
const completionBody = fc.record(
  {
    prompt: fc.oneof(
      text,
      fc.array(text, { maxLength: 4 }),
      fc.array(fc.nat(), { maxLength: 20 }),
      fc.array(fc.array(fc.nat(), { maxLength: 5 }), { maxLength: 3 }),
      fc.jsonValue({ maxDepth: 3 }),
    ),
  },
  { requiredKeys: [] },
);

describe('request/extract-prompt (properties)', () => {
  it('random bytes: only RouterError, always terminates', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PATHS), fc.uint8Array({ maxLength: 200 }), fc.nat(300), (path, body, max) => {
        run(path, body, max);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('random JSON values: only RouterError, bounded prefix', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PATHS), fc.jsonValue(), fc.nat(300), (path, value, max) => {
        run(path, bytes(value), max);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('chat- and completion-shaped bodies: only RouterError, deterministic', () => {
    fc.assert(
      fc.property(fc.constantFrom(...PATHS), fc.oneof(chatBody, completionBody), fc.nat(300), (path, value, max) => {
        const body = bytes(value);
        const a = run(path, body, max);
        const b = run(path, body, max);
        if (a instanceof RouterError) expect(b).to.be.instanceOf(RouterError);
        else expect(b).to.deep.equal(a);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('a shorter bound gives a prefix of the longer bound', () => {
    fc.assert(
      fc.property(chatBody, fc.nat(200), fc.nat(200), (value, x, y) => {
        const body = bytes(value);
        const a = run('/v1/chat/completions', body, Math.min(x, y));
        const b = run('/v1/chat/completions', body, Math.max(x, y));
        if (a instanceof RouterError || b instanceof RouterError) return;
        expect(b.prefix.startsWith(a.prefix)).to.equal(true);
        expect(a.promptChars).to.equal(b.promptChars);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('appending a message extends the prefix (multi-turn affinity)', () => {
    const simple = fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: text });
    fc.assert(
      fc.property(fc.array(simple, { minLength: 1, maxLength: 5 }), simple, (messages, next) => {
        const a = run('/v1/chat/completions', bytes({ messages }), 10_000);
        const b = run('/v1/chat/completions', bytes({ messages: [...messages, next] }), 10_000);
        if (a instanceof RouterError || b instanceof RouterError) expect.fail('valid chats must not fail');
        expect(b.prefix.startsWith(a.prefix)).to.equal(true);
        expect(b.prefix.length).to.be.greaterThan(a.prefix.length);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('different simple conversations give different prefixes (injectivity)', () => {
    const simple = fc.record({ role: fc.constantFrom('system', 'user', 'assistant'), content: text });
    fc.assert(
      fc.property(fc.array(simple, { minLength: 1, maxLength: 4 }), fc.array(simple, { minLength: 1, maxLength: 4 }), (m1, m2) => {
        const a = run('/v1/chat/completions', bytes({ messages: m1 }), 100_000);
        const b = run('/v1/chat/completions', bytes({ messages: m2 }), 100_000);
        if (a instanceof RouterError || b instanceof RouterError) expect.fail('valid chats must not fail');
        const same = JSON.stringify(m1) === JSON.stringify(m2);
        expect(a.prefix === b.prefix).to.equal(same);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });
});
