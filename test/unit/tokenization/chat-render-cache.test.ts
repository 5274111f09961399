import { expect } from 'chai';
import fc from 'fast-check';
import { Template } from '@huggingface/jinja';
import { ChatRenderCache, contentIsOpaque, type ContentFormat, type TemplateMessage } from '../../../src/tokenization/chat-render-cache.js';
import { TINY_CHAT_TEMPLATE } from '../../kit/tiny-tokenizer.js';

/** String-format templates whose content is opaque. */
const STRING_TEMPLATES = [
  TINY_CHAT_TEMPLATE,
  "{{ bos_token }}{% for m in messages %}{% if loop.first and m.role != 'system' %}<|system|>\ndefault<|end|>\n{% endif %}{% if m.role not in ['system', 'user', 'assistant', 'tool'] %}{{ raise_exception('bad role') }}{% endif %}<|{{ m.role }}|>\n{% if m.content %}{{ m.content }}{% else %}(empty){% endif %}{% if m.tool_calls is defined %}{% for c in m.tool_calls %}<call>{{ c.function.name }}</call>{% endfor %}{% endif %}<|end|>\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}",
  "{% for m in messages %}{% if m['content'] is not none %}[{{ m['role'] }}]{{ m['content'] + '\n' }}{% endif %}{% if not m['content'] %}-{% endif %}{% endfor %}",
];

/** An openai-format template (vLLM passes content as a list of parts), like the tiny vLLM model's. */
const PARTS_TEMPLATE =
  "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' }}{% if message['content'] is string %}{{ message['content'] }}{% elif message['content'] %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{{ '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

/** Templates that look at content in ways a placeholder would change: rendered in full. */
const NOT_OPAQUE = [
  "{% for m in messages %}{{ m['content'] | trim }}{% endfor %}",
  "{{ messages[0]['content'] }}{% for m in messages %}{{ m.role }}{% endfor %}",
  '{% for m in messages %}{{ m | tojson }}{% endfor %}',
  "{% for m in messages %}{% set c = m['content'] %}{{ c }}{% endfor %}",
  "{% for m in messages %}{% if not loop.last %}{{ loop.nextitem['content'] }}{% endif %}{% endfor %}",
  "{% for m in messages %}{% if m.content == '' %}x{% endif %}{{ m.content }}{% endfor %}",
  "{% for m in messages %}{% if '</think>' in m.content %}x{% endif %}{{ m.content }}{% endfor %}",
  '{% for m in messages %}{% filter upper %}{{ m.content }}{% endfilter %}{% endfor %}',
  "{% for m in messages %}{{ m.get('content') }}{% endfor %}",
  '{% for m in messages %}{{ m.content[0] }}{% endfor %}',
  '{% for m in messages %}{{ m.content | length }}{% endfor %}',
];

function renderer(source: string): (messages: readonly TemplateMessage[], tools: readonly unknown[] | undefined) => string {
  const t = new Template(source);
  return (messages, tools) =>
    t.render({
      messages: messages as TemplateMessage[],
      ...(tools !== undefined ? { tools: tools as unknown[] } : {}),
      add_generation_prompt: true,
      bos_token: '<s>',
      eos_token: '</s>',
    });
}

const text = fc.oneof(
  fc.constant(''),
  fc.string({ maxLength: 40 }),
  fc.constantFrom(' lead and trail ', '<|end|>', '\uE0000\uE001', '{{ x }}', 'line\nbreak', 'x'),
);
const role = fc.constantFrom('system', 'user', 'assistant', 'tool');
const stringMessage = fc.record({ role, content: text }, { requiredKeys: ['role', 'content'] });
const partsMessage = fc.record({
  role,
  content: fc.array(fc.oneof(fc.record({ type: fc.constant('text'), text }), fc.record({ type: fc.constant('image_url') })), {
    maxLength: 3,
  }),
});

describe('tokenization: chat render cache', () => {
  it('finds content opaque exactly in the templates that only write it out or test it', () => {
    for (const t of STRING_TEMPLATES) expect(contentIsOpaque(new Template(t).parsed, t), t).to.equal(true);
    expect(contentIsOpaque(new Template(PARTS_TEMPLATE).parsed, PARTS_TEMPLATE, 'openai')).to.equal(true);
    // In the string format its loop over parts is never reached for a non-empty string.
    expect(contentIsOpaque(new Template(PARTS_TEMPLATE).parsed, PARTS_TEMPLATE, 'string')).to.equal(true);
    // Without the `is string` guard, content is iterated: not opaque.
    const unguarded = "{% for m in messages %}{% for p in m['content'] %}{{ p }}{% endfor %}{% endfor %}";
    expect(contentIsOpaque(new Template(unguarded).parsed, unguarded, 'string')).to.equal(false);
    for (const t of NOT_OPAQUE) expect(contentIsOpaque(new Template(t).parsed, t), t).to.equal(false);
  });

  it('renders exactly what the template renders, for any conversation (property, both content formats)', () => {
    const cases: { source: string; format: ContentFormat; message: fc.Arbitrary<TemplateMessage> }[] = [
      ...STRING_TEMPLATES.map((source) => ({ source, format: 'string' as const, message: stringMessage as fc.Arbitrary<TemplateMessage> })),
      { source: PARTS_TEMPLATE, format: 'openai', message: partsMessage as fc.Arbitrary<TemplateMessage> },
      { source: PARTS_TEMPLATE, format: 'string', message: stringMessage as fc.Arbitrary<TemplateMessage> },
    ];
    for (const c of cases) {
      const render = renderer(c.source);
      const cache = new ChatRenderCache(render, contentIsOpaque(new Template(c.source).parsed, c.source, c.format), c.format, 8);
      fc.assert(
        fc.property(fc.array(c.message, { minLength: 1, maxLength: 6 }), (messages) => {
          let want: string | Error;
          try {
            want = render(messages, undefined);
          } catch (err) {
            want = err as Error;
          }
          if (want instanceof Error) {
            expect(() => cache.renderChat(messages, undefined)).to.throw();
            return;
          }
          expect(cache.renderChat(messages, undefined)).to.equal(want);
          // A second time comes from the skeleton, with other texts of the same shape.
          const other = messages.map((m) =>
            typeof m.content === 'string' && m.content.length > 0 ? { ...m, content: `${m.content}!` } : m,
          );
          expect(cache.renderChat(other, undefined)).to.equal(render(other, undefined));
        }),
        { seed: 11, numRuns: 150 },
      );
      if (c.format === 'string') expect(cache.stats().hits, c.source).to.be.greaterThan(0);
    }
  });

  it('reuses one skeleton per shape, and renders in full when a placeholder could be forged or the template is not opaque', () => {
    const render = renderer(TINY_CHAT_TEMPLATE);
    const cache = new ChatRenderCache(render, true);
    const a = [
      { role: 'system', content: 'S'.repeat(1000) },
      { role: 'user', content: 'one' },
    ];
    const b = [
      { role: 'system', content: 'S'.repeat(1000) },
      { role: 'user', content: 'two' },
    ];
    expect(cache.renderChat(a, undefined)).to.equal(render(a, undefined));
    expect(cache.renderChat(b, undefined)).to.equal(render(b, undefined));
    expect(cache.stats()).to.include({ misses: 1, hits: 1, full: 0, shapes: 1 });
    // A placeholder in another field (here the role) must not be mistaken for a slot.
    const forged = [{ role: 'user\uE0000\uE001', content: 'x' }];
    expect(cache.renderChat(forged, undefined)).to.equal(render(forged, undefined));
    expect(cache.stats().full).to.equal(1);
    const trim = "{% for m in messages %}{{ m['content'] | trim }}{% endfor %}";
    const off = new ChatRenderCache(renderer(trim), contentIsOpaque(new Template(trim).parsed, trim));
    expect(off.renderChat([{ role: 'user', content: '  padded  ' }], undefined)).to.equal('padded');
    expect(off.stats()).to.include({ hits: 0, misses: 0, full: 1 });
  });
});
