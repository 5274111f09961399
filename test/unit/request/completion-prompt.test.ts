import { expect } from 'chai';
import { extractPrompt } from '../../../src/request/extract-prompt.js';
import { COMPLETIONS, OPTS, completion, expectBadRequest, fixture } from './body-helpers.js';

describe('request/completion-prompt', () => {
  it('uses a string prompt as the prefix and estimates tokens from its length', () => {
    const r = extractPrompt(COMPLETIONS, fixture('completion-text.json'), OPTS);
    expect(r.kind).to.equal('completion');
    expect(r.prefix).to.equal('Once upon a time');
    expect(r.promptChars).to.equal(16);
    expect(r.promptTokens).to.equal(4);
    expect(r.maxTokens).to.equal(16);
  });

  it('joins a batch of strings with a separator text cannot produce', () => {
    const r = extractPrompt(COMPLETIONS, fixture('completion-batch.json'), OPTS);
    expect(r.prefix).to.equal('Once upon a time\u0003In a galaxy far away');
    expect(completion({ prompt: ['ab'] }).prefix).to.equal(completion({ prompt: 'ab' }).prefix);
    expect(completion({ prompt: ['a', 'b'] }).prefix).to.not.equal(completion({ prompt: 'ab' }).prefix);
    expect(completion({ prompt: ['a\u0003b'] }).prefix).to.not.equal(completion({ prompt: ['a', 'b'] }).prefix);
  });

  it('renders token ids in a stable text form with an exact token count', () => {
    const r = extractPrompt(COMPLETIONS, fixture('completion-token-ids.json'), OPTS);
    expect(r.prefix).to.equal('\u00021 15043 29892 3186 29991 ');
    expect(r.promptTokens).to.equal(5);
    const longer = completion({ prompt: [1, 15043, 29892, 3186, 29991, 7] });
    expect(longer.prefix.startsWith(r.prefix)).to.equal(true);
    expect(completion({ prompt: '1 15043 29892 3186 29991 ' }).prefix).to.not.equal(r.prefix);
  });

  it('sums exact token counts across a batch of token-id arrays', () => {
    const r = extractPrompt(COMPLETIONS, fixture('completion-token-id-batch.json'), OPTS);
    expect(r.promptTokens).to.equal(5);
    expect(r.prefix).to.equal('\u00021 15043 \u0003\u00021 3186 29991 ');
  });

  it('keeps the exact token count even when the prefix is cut', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => i);
    const r = completion({ prompt: ids }, { maxPrefixChars: 100, charsPerToken: 4 });
    expect(r.promptTokens).to.equal(10_000);
    expect(r.prefix.length).to.equal(100);
    expect(r.promptChars).to.be.greaterThan(10_000);
  });

  it('treats an empty prompt as empty', () => {
    for (const prompt of ['', []]) {
      const r = completion({ prompt });
      expect(r.prefix).to.equal('');
      expect(r.promptTokens).to.equal(0);
    }
  });

  describe('bad prompts', () => {
    const SECRET = 'SECRET-PROMPT';
    const table: [string, unknown, string][] = [
      ['missing prompt', { model: 'm' }, 'prompt'],
      ['null prompt', { prompt: null }, 'prompt'],
      ['prompt is a number', { prompt: 3 }, 'prompt'],
      ['prompt is an object', { prompt: { text: SECRET } }, 'prompt'],
      ['mixed strings and numbers', { prompt: [SECRET, 1] }, 'prompt[1]'],
      ['mixed numbers and strings', { prompt: [1, SECRET] }, 'prompt[1]'],
      ['negative token id', { prompt: [1, -2] }, 'prompt[1]'],
      ['fractional token id', { prompt: [1.5] }, 'prompt[0]'],
      ['huge token id', { prompt: [2 ** 60] }, 'prompt[0]'],
      ['nested non-array', { prompt: [[1], 2] }, 'prompt[1]'],
      ['nested bad id', { prompt: [[1], [2, SECRET]] }, 'prompt[1][1]'],
      ['bool first item', { prompt: [true] }, 'prompt[0]'],
    ];
    for (const [name, body, field] of table) {
      it(`${name} → BAD_REQUEST naming ${field}`, () => {
        expectBadRequest(() => completion(body), field, [SECRET]);
      });
    }
  });
});
