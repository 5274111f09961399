import { expect } from 'chai';
import { extractPrompt } from '../../../src/request/extract-prompt.js';
import { CHAT, COMPLETIONS, OPTS, bytes, chat, expectBadRequest, fixture } from './body-helpers.js';

describe('request/extract-prompt', () => {
  describe('request fields', () => {
    it('reads model, max_tokens and stream', () => {
      const r = extractPrompt(CHAT, fixture('chat-basic.json'), OPTS);
      expect(r).to.include({ kind: 'chat', model: 'sim-llama', maxTokens: 64, stream: false });
    });

    it('prefers max_completion_tokens over max_tokens', () => {
      expect(chat({ messages: [{ role: 'user', content: 'x' }], max_tokens: 5, max_completion_tokens: 7 }).maxTokens).to.equal(7);
      expect(extractPrompt(CHAT, fixture('chat-multi-turn.json'), OPTS)).to.include({ maxTokens: 32, stream: true });
    });

    it('defaults: no model → empty, no stream → false, no max tokens → absent', () => {
      const r = chat({ messages: [{ role: 'user', content: 'x' }] });
      expect(r.model).to.equal('');
      expect(r.stream).to.equal(false);
      expect(r).to.not.have.property('maxTokens');
      const nulls = chat({ messages: [{ role: 'user', content: 'x' }], model: null, stream: null, max_tokens: null });
      expect(nulls.model).to.equal('');
      expect(nulls).to.not.have.property('maxTokens');
    });

    const bad: [string, Record<string, unknown>, string][] = [
      ['model not a string', { model: 7 }, 'model'],
      ['stream not a boolean', { stream: 'yes' }, 'stream'],
      ['max_tokens negative', { max_tokens: -1 }, 'max_tokens'],
      ['max_tokens fractional', { max_tokens: 1.5 }, 'max_tokens'],
      ['max_completion_tokens string', { max_completion_tokens: '5' }, 'max_completion_tokens'],
    ];
    for (const [name, extra, field] of bad) {
      it(`${name} → BAD_REQUEST`, () => {
        expectBadRequest(() => chat({ messages: [{ role: 'user', content: 'x' }], ...extra }), field);
      });
    }
  });

  describe('kind', () => {
    const chatBody = bytes({ messages: [{ role: 'user', content: 'x' }] });
    const promptBody = bytes({ prompt: 'x' });

    it('follows the path suffix, ignoring query string and trailing slash', () => {
      expect(extractPrompt('/v1/chat/completions?a=b', chatBody, OPTS).kind).to.equal('chat');
      expect(extractPrompt('/openai/v1/chat/completions/', chatBody, OPTS).kind).to.equal('chat');
      expect(extractPrompt('/v1/completions#x', promptBody, OPTS).kind).to.equal('completion');
    });

    it('path wins over the body shape', () => {
      expectBadRequest(() => extractPrompt(COMPLETIONS, chatBody, OPTS), 'prompt');
      expectBadRequest(() => extractPrompt(CHAT, promptBody, OPTS), 'messages');
    });

    it('other paths fall back to the body shape', () => {
      expect(extractPrompt('/generate', chatBody, OPTS).kind).to.equal('chat');
      expect(extractPrompt('/generate', promptBody, OPTS).kind).to.equal('completion');
      expectBadRequest(() => extractPrompt('/generate', bytes({ input: 'x' }), OPTS), 'neither');
    });
  });

  describe('bounds and estimates', () => {
    it('caps the prefix at maxPrefixChars and measures the whole prompt', () => {
      const text = 'abcdefgh'.repeat(1000);
      const full = chat({ messages: [{ role: 'user', content: text }] });
      const cut = chat({ messages: [{ role: 'user', content: text }] }, { maxPrefixChars: 100, charsPerToken: 4 });
      expect(cut.prefix.length).to.equal(100);
      expect(full.prefix.startsWith(cut.prefix)).to.equal(true);
      expect(cut.promptChars).to.equal(full.promptChars);
      expect(full.promptChars).to.equal(full.prefix.length);
    });

    it('estimates tokens as ceil(promptChars / charsPerToken)', () => {
      const r = chat({ messages: [{ role: 'user', content: 'x'.repeat(33) }] }, { maxPrefixChars: 10, charsPerToken: 3 });
      expect(r.promptTokens).to.equal(Math.ceil(r.promptChars / 3));
      const r2 = chat({ messages: [{ role: 'user', content: 'x'.repeat(33) }] }, { maxPrefixChars: 10, charsPerToken: 2.5 });
      expect(r2.promptTokens).to.equal(Math.ceil(r.promptChars / 2.5));
    });

    it('handles a 10 MB body', () => {
      const big = 'lorem ipsum '.repeat(875_000); // ≈10.5 MB
      const body = bytes({
        model: 'm',
        messages: [
          { role: 'system', content: big },
          { role: 'user', content: 'q' },
        ],
      });
      expect(body.byteLength).to.be.greaterThan(10_000_000);
      const r = extractPrompt(CHAT, body, OPTS);
      expect(r.prefix.length).to.equal(OPTS.maxPrefixChars);
      expect(r.promptChars).to.be.greaterThan(big.length);
      expect(r.promptTokens).to.equal(Math.ceil(r.promptChars / OPTS.charsPerToken));
    });

    it('rejects bad options as an internal error', () => {
      expect(() => extractPrompt(CHAT, bytes({}), { maxPrefixChars: -1, charsPerToken: 4 })).to.throw(/maxPrefixChars/);
      expect(() => extractPrompt(CHAT, bytes({}), { maxPrefixChars: 1, charsPerToken: 0 })).to.throw(/charsPerToken/);
    });
  });

  describe('encoding', () => {
    it('decodes invalid UTF-8 with replacement characters', () => {
      const head = new TextEncoder().encode('{"prompt":"a');
      const tail = new TextEncoder().encode('b"}');
      const body = new Uint8Array([...head, 0xff, 0xfe, ...tail]);
      const r = extractPrompt(COMPLETIONS, body, OPTS);
      expect(r.prefix).to.equal('a\ufffd\ufffdb');
    });

    it('accepts a UTF-8 byte order mark', () => {
      const body = new Uint8Array([0xef, 0xbb, 0xbf, ...bytes({ prompt: 'x' })]);
      expect(extractPrompt(COMPLETIONS, body, OPTS).prefix).to.equal('x');
    });

    it('keeps non-ASCII text intact and counts UTF-16 code units', () => {
      const r = extractPrompt(COMPLETIONS, bytes({ prompt: 'héllo 😀' }), OPTS);
      expect(r.prefix).to.equal('héllo 😀');
      expect(r.promptChars).to.equal('héllo 😀'.length);
    });
  });

  describe('malformed bodies', () => {
    const SECRET = 'SECRET-PROMPT';
    it('invalid JSON → BAD_REQUEST without quoting the body', () => {
      expectBadRequest(() => extractPrompt(CHAT, fixture('malformed-truncated.json'), OPTS), 'not valid JSON', [SECRET]);
      expectBadRequest(() => extractPrompt(CHAT, new TextEncoder().encode(`${SECRET}`), OPTS), 'JSON', [SECRET]);
      expectBadRequest(() => extractPrompt(CHAT, new Uint8Array(0), OPTS), 'JSON');
    });

    for (const value of [[SECRET], `${SECRET}`, 42, null, true]) {
      it(`top-level ${JSON.stringify(value)} → BAD_REQUEST`, () => {
        expectBadRequest(() => extractPrompt(CHAT, bytes(value), OPTS), 'request body', [SECRET]);
      });
    }

    it('deeply nested tool definitions → BAD_REQUEST', () => {
      // Built as text: JSON.stringify itself overflows the stack at this depth.
      const deep = '{"a":'.repeat(10_000) + '{}' + '}'.repeat(10_000);
      const body = new TextEncoder().encode(`{"tools":[${deep}],"messages":[{"role":"user","content":"x"}]}`);
      expectBadRequest(() => extractPrompt(CHAT, body, OPTS), 'tools[0]');
    });

    it('ignores inherited property names', () => {
      const body = new TextEncoder().encode('{"prompt":"x","__proto__":{"messages":[1]}}');
      expect(extractPrompt('/generate', body, OPTS).kind).to.equal('completion');
    });
  });
});
