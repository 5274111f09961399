import { expect } from 'chai';
import {
  chatPrompt,
  completionPrompt,
  contentText,
  PromptError,
  promptTokenIds,
  renderChat,
} from '../../../../src/simulate/engine/prompt-template.js';

describe('sim-engine prompt template', () => {
  it('renders tools first, then each message as <|role|>\\ncontent\\n', () => {
    const tools = [{ type: 'function', function: { name: 'f' } }];
    const text = renderChat(
      [
        { role: 'system', content: 'S' },
        { role: 'user', content: 'U' },
      ],
      tools,
    );
    expect(text).to.equal(`${JSON.stringify(tools)}\n<|system|>\nS\n<|user|>\nU\n`);
    expect(renderChat([{ role: 'user', content: 'U' }], [])).to.equal('<|user|>\nU\n');
  });

  it('concatenates the text parts of content arrays and ignores other parts', () => {
    expect(
      contentText([
        { type: 'text', text: 'a' },
        { type: 'image_url', image_url: { url: 'x' } },
        { type: 'text', text: 'b' },
      ]),
    ).to.equal('ab');
    expect(contentText(null)).to.equal('');
    expect(() => contentText(42)).to.throw(PromptError);
  });

  it('keeps turn N a text prefix of turn N+1 (no generation prompt)', () => {
    const t1 = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q1' },
    ];
    const t2 = [...t1, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }];
    const r1 = renderChat(t1);
    expect(renderChat(t2).startsWith(r1)).to.equal(true);
    const ids1 = promptTokenIds({ kind: 'text', text: r1 }, 4);
    const ids2 = promptTokenIds({ kind: 'text', text: renderChat(t2) }, 4);
    const shared = Math.floor(r1.length / 4);
    expect(ids2.slice(0, shared)).to.deep.equal(ids1.slice(0, shared));
  });

  it('is deterministic for equal bodies', () => {
    const body = { messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }], tools: [{ a: 1 }] };
    expect(chatPrompt(body)).to.deep.equal(chatPrompt(JSON.parse(JSON.stringify(body)) as Record<string, unknown>));
  });

  it('validates chat messages', () => {
    expect(() => chatPrompt({})).to.throw(PromptError);
    expect(() => chatPrompt({ messages: [] })).to.throw(PromptError);
    expect(() => chatPrompt({ messages: [{ content: 'x' }] })).to.throw(PromptError);
  });

  it('accepts completions prompts as string, string array (joined) or token ids', () => {
    expect(completionPrompt({ prompt: 'abc' })).to.deep.equal({ kind: 'text', text: 'abc' });
    expect(completionPrompt({ prompt: ['ab', 'cd'] })).to.deep.equal({ kind: 'text', text: 'abcd' });
    expect(completionPrompt({ prompt: [1, 2, 3] })).to.deep.equal({ kind: 'ids', ids: [1, 2, 3] });
    expect(completionPrompt({ prompt: [[1, 2], [3]] })).to.deep.equal({ kind: 'ids', ids: [1, 2, 3] });
    expect(() => completionPrompt({ prompt: [1, 'a'] })).to.throw(PromptError);
    expect(() => completionPrompt({})).to.throw(PromptError);
    expect(promptTokenIds({ kind: 'ids', ids: [5, 6] }, 4)).to.deep.equal([5, 6]);
    expect(promptTokenIds({ kind: 'text', text: '' }, 4)).to.deep.equal([0]);
  });
});
