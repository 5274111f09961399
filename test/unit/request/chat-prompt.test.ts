import { expect } from 'chai';
import { extractPrompt } from '../../../src/request/extract-prompt.js';
import { CHAT, OPTS, chat, expectBadRequest, fixture } from './body-helpers.js';

const SYSTEM = { role: 'system', content: 'You are a helpful assistant.' };
const user = (content: unknown) => ({ role: 'user', content });

describe('request/chat-prompt', () => {
  describe('layout', () => {
    it('renders every message role in order with its content', () => {
      const roles = ['system', 'developer', 'user', 'assistant', 'tool'];
      const r = chat({ messages: roles.map((role, i) => ({ role, content: `text-${i}` })) });
      let pos = -1;
      roles.forEach((role, i) => {
        const at = r.prefix.indexOf(`\u0001${role}\u0002content=text-${i}\u0003`);
        expect(at, role).to.be.greaterThan(pos);
        pos = at;
      });
    });

    it('puts tool definitions before the messages', () => {
      const r = extractPrompt(CHAT, fixture('chat-tools.json'), OPTS);
      const tool = r.prefix.indexOf('get_weather');
      const firstMessage = r.prefix.indexOf('\u0001developer');
      expect(tool).to.be.at.least(0);
      expect(tool).to.be.lessThan(firstMessage);
      expect(r.prefix.startsWith('\u0001tool\u0002')).to.equal(true);
    });

    it('serialises tools with a stable key order but keeps the order of tools', () => {
      const f = { type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } };
      const fReordered = { function: { parameters: { properties: {}, type: 'object' }, name: 'f' }, type: 'function' };
      const g = { type: 'function', function: { name: 'g' } };
      const messages = [user('hi')];
      expect(chat({ tools: [f, g], messages }).prefix).to.equal(chat({ tools: [fReordered, g], messages }).prefix);
      expect(chat({ tools: [f, g], messages }).prefix).to.not.equal(chat({ tools: [g, f], messages }).prefix);
      expect(chat({ tools: [f], messages }).prefix).to.not.equal(chat({ messages }).prefix);
    });

    it('includes assistant tool_calls and the tool message tool_call_id', () => {
      const r = extractPrompt(CHAT, fixture('chat-tools.json'), OPTS);
      expect(r.prefix).to.include('\u0001assistant\u0002tool_calls=');
      expect(r.prefix).to.include('"arguments":"{\\"city\\":\\"Oslo\\"}"');
      expect(r.prefix).to.include('\u0001tool\u0002tool_call_id=call_1\u0002content=');
      const otherArgs = JSON.parse(new TextDecoder().decode(fixture('chat-tools.json'))) as {
        messages: { tool_calls?: { function: { arguments: string } }[] }[];
      };
      const call = otherArgs.messages[2]?.tool_calls?.[0];
      if (call) call.function.arguments = '{"city":"Bergen"}';
      expect(chat(otherArgs).prefix).to.not.equal(r.prefix);
    });

    it('records the message name', () => {
      const a = chat({ messages: [{ role: 'user', name: 'alice', content: 'x' }] });
      const b = chat({ messages: [{ role: 'user', name: 'bob', content: 'x' }] });
      expect(a.prefix).to.include('name=alice');
      expect(a.prefix).to.not.equal(b.prefix);
    });

    it('accepts null and missing content', () => {
      const r = chat({ messages: [{ role: 'assistant', content: null }, { role: 'assistant' }] });
      expect(r.prefix).to.equal('\u0001assistant\u0003\u0001assistant\u0003');
    });
  });

  describe('content parts', () => {
    it('concatenates text parts', () => {
      const parts = chat({
        messages: [
          user([
            { type: 'text', text: 'Hello, ' },
            { type: 'text', text: 'world' },
          ]),
        ],
      });
      const plain = chat({ messages: [user('Hello, world')] });
      expect(parts.prefix).to.equal(plain.prefix);
    });

    it('turns media into fixed-size placeholders that differ by URL or data', () => {
      const img = (url: string) => chat({ messages: [user([{ type: 'image_url', image_url: { url } }])] });
      const a = img('https://example.com/a.png');
      const b = img('https://example.com/b.png');
      const a2 = img('https://example.com/a.png');
      expect(a.prefix).to.equal(a2.prefix);
      expect(a.prefix).to.not.equal(b.prefix);
      expect(a.prefix.length).to.equal(b.prefix.length);
      expect(a.prefix).to.not.include('example.com');
      expect(a.prefix).to.match(/\u0004\[image:[0-9a-f]{16}\]/);
    });

    it('does not copy inline image data into the prefix', () => {
      const data = 'data:image/png;base64,' + 'A'.repeat(100_000);
      const r = chat({ messages: [user([{ type: 'image_url', image_url: { url: data } }])] });
      expect(r.prefix.length).to.be.lessThan(100);
      expect(r.promptChars).to.equal(r.prefix.length);
    });

    it('handles every media part shape from the fixture', () => {
      const r = extractPrompt(CHAT, fixture('chat-multimodal.json'), OPTS);
      expect(r.prefix).to.include('Describe this picture:');
      expect(r.prefix).to.match(/\[image:[0-9a-f]{16}\]/);
      expect(r.prefix).to.match(/\[audio:[0-9a-f]{16}\]/);
      expect(r.prefix).to.match(/\[file:[0-9a-f]{16}\]/);
      expect(r.prefix).to.not.include('UklGRiQAAABXQVZF');
      expect(r.model).to.equal('sim-vision');
    });

    it('distinguishes media kinds carrying the same data, and unknown part types', () => {
      const same = 'abc';
      const image = chat({ messages: [user([{ type: 'image_url', image_url: { url: same } }])] });
      const video = chat({ messages: [user([{ type: 'video_url', video_url: { url: same } }])] });
      const audio = chat({ messages: [user([{ type: 'input_audio', input_audio: { data: same, format: 'wav' } }])] });
      const file = chat({ messages: [user([{ type: 'file', file: { file_data: same } }])] });
      const prefixes = new Set([image.prefix, video.prefix, audio.prefix, file.prefix]);
      expect(prefixes.size).to.equal(4);
      const u1 = chat({ messages: [user([{ type: 'custom', x: 1 }])] });
      const u2 = chat({ messages: [user([{ type: 'custom', x: 2 }])] });
      expect(u1.prefix).to.match(/\[part:[0-9a-f]{16}\]/);
      expect(u1.prefix).to.not.equal(u2.prefix);
    });

    it('accepts input_image, refusal and bare-string image_url', () => {
      const a = chat({ messages: [user([{ type: 'input_image', image_url: 'u' }])] });
      const b = chat({ messages: [user([{ type: 'image_url', image_url: 'u' }])] });
      const c = chat({ messages: [user([{ type: 'image_url', image_url: { url: 'u' } }])] });
      expect(a.prefix).to.equal(b.prefix);
      expect(b.prefix).to.equal(c.prefix);
      const refusal = chat({ messages: [{ role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] }] });
      expect(refusal.prefix).to.include('content=no');
    });

    it('text that looks like a placeholder cannot collide with a real one', () => {
      const real = chat({ messages: [user([{ type: 'image_url', image_url: { url: 'u' } }])] });
      const fake = chat({ messages: [user(real.prefix.slice(real.prefix.indexOf('\u0004'), -1))] });
      expect(fake.prefix).to.not.equal(real.prefix);
    });
  });

  describe('affinity properties', () => {
    it('a conversation extended by a turn keeps the shorter prefix as its prefix', () => {
      const short = extractPrompt(CHAT, fixture('chat-basic.json'), OPTS);
      const long = extractPrompt(CHAT, fixture('chat-multi-turn.json'), OPTS);
      expect(long.prefix.startsWith(short.prefix)).to.equal(true);
      expect(long.prefix.length).to.be.greaterThan(short.prefix.length);
    });

    it('holds when both are cut by the bound', () => {
      const opts = { maxPrefixChars: 50, charsPerToken: 4 };
      const base = [SYSTEM, user('x'.repeat(80))];
      const a = chat({ messages: base }, opts);
      const b = chat({ messages: [...base, { role: 'assistant', content: 'y' }] }, opts);
      expect(a.prefix).to.equal(b.prefix);
      expect(a.prefix.length).to.equal(50);
    });

    it('different conversations differ, including ones that only move text across messages', () => {
      const cases = [
        [user('ab')],
        [user('a'), user('b')],
        [user('a'), { role: 'assistant', content: 'b' }],
        [{ role: 'assistant', content: 'ab' }],
        [user('ab'), user('')],
        [user('a\u0003\u0001user\u0002content=b')],
        [SYSTEM, user('ab')],
        [{ role: 'user', name: 'a', content: 'b' }],
      ];
      const seen = new Set(cases.map((messages) => chat({ messages }).prefix));
      expect(seen.size).to.equal(cases.length);
    });

    it('is deterministic', () => {
      const body = fixture('chat-tools.json');
      const a = extractPrompt(CHAT, body, OPTS);
      const b = extractPrompt(CHAT, body, OPTS);
      expect(a).to.deep.equal(b);
    });
  });

  describe('bad chat bodies', () => {
    const SECRET = 'SECRET-PROMPT';
    const table: [string, unknown, string][] = [
      ['missing messages', { model: 'm' }, 'messages'],
      ['messages not an array', { messages: SECRET }, 'messages'],
      ['empty messages', { messages: [] }, 'messages'],
      ['message not an object', { messages: [SECRET] }, 'messages[0]'],
      ['missing role', { messages: [{ content: SECRET }] }, 'messages[0].role'],
      ['empty role', { messages: [{ role: '', content: SECRET }] }, 'messages[0].role'],
      ['content is a number', { messages: [user(5)] }, 'messages[0].content'],
      ['content is an object', { messages: [user({ text: SECRET })] }, 'messages[0].content'],
      ['part not an object', { messages: [user([SECRET])] }, 'messages[0].content[0]'],
      ['part without type', { messages: [user([{ text: SECRET }])] }, 'messages[0].content[0].type'],
      ['text part without text', { messages: [user([{ type: 'text', txt: SECRET }])] }, 'content[0].text'],
      ['image without url', { messages: [user([{ type: 'image_url', image_url: { u: SECRET } }])] }, 'image_url.url'],
      ['audio without data', { messages: [user([{ type: 'input_audio', input_audio: {} }])] }, 'input_audio.data'],
      ['file not an object', { messages: [user([{ type: 'file', file: SECRET }])] }, 'content[0].file'],
      ['name not a string', { messages: [{ role: 'user', name: 1, content: SECRET }] }, 'messages[0].name'],
      ['tool_call_id not a string', { messages: [{ role: 'tool', tool_call_id: 2, content: 'x' }] }, 'tool_call_id'],
      ['tool_calls not an array', { messages: [{ role: 'assistant', tool_calls: SECRET }] }, 'tool_calls'],
      ['tool call not an object', { messages: [{ role: 'assistant', tool_calls: [SECRET] }] }, 'tool_calls[0]'],
      ['tools not an array', { tools: SECRET, messages: [user('x')] }, 'tools'],
      ['tool not an object', { tools: [SECRET], messages: [user('x')] }, 'tools[0]'],
    ];
    for (const [name, body, field] of table) {
      it(`${name} → BAD_REQUEST naming ${field}`, () => {
        expectBadRequest(() => chat(body), field, [SECRET]);
      });
    }

    it('fixture with object content is rejected without echoing the prompt', () => {
      expectBadRequest(() => extractPrompt(CHAT, fixture('malformed-content-type.json'), OPTS), 'content', ['SECRET-PROMPT']);
    });
  });
});
