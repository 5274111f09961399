import { expect } from 'chai';
import { Tokenizer } from '@huggingface/tokenizers';
import fc from 'fast-check';
import { AddedTokenFinder } from '../../../src/tokenization/added-token-finder.js';
import { ModelTokenizer } from '../../../src/tokenization/model-tokenizer.js';
import { commonPrefixLength } from '../../../src/tokenization/prefix-resume-cache.js';
import { TINY_CHAT_TEMPLATE, tinyTokenizerJson } from '../../kit/tiny-tokenizer.js';

const CONFIG = { tokenizer_class: 'PreTrainedTokenizerFast', bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>' };

// Words, spaces, apostrophes, digits, punctuation, line ends, multi-byte and astral text: the
// cut positions (letter then space) sit next to every other class.
const FRAGMENT = fc.constantFrom(
  'You are',
  ' helpful',
  'word ',
  ' the',
  "'s",
  "'LL ",
  ' ',
  '  ',
  '   ',
  '\n',
  '\r\n',
  '\n\n ',
  '\t',
  '12345',
  ' 7',
  '3.14',
  '!!',
  ' ?!',
  '...',
  'é',
  'naïve ',
  '🙂',
  '日本語 ',
  ' def main():',
  'x',
  'ABC ',
  'a b',
);

function make(): ModelTokenizer {
  const json = tinyTokenizerJson();
  return new ModelTokenizer(new Tokenizer(json, CONFIG), json, CONFIG, TINY_CHAT_TEMPLATE);
}

function longText(parts: string[]): string {
  let t = parts.join('');
  while (t.length < 1500) t += parts.join('') + ' filler words here ';
  return t;
}

describe('tokenization: prefix resume (completions prompts)', () => {
  it('resumed ids equal the library encoding the whole text (property: shared starts of any length, then any tail)', () => {
    const tok = make();
    fc.assert(
      fc.property(
        fc.array(FRAGMENT, { minLength: 5, maxLength: 40 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.array(FRAGMENT, { maxLength: 20 }),
        fc.boolean(),
        (base, cut, tail, special) => {
          const first = longText(base);
          const second = first.slice(0, 1100 + Math.floor(cut * (first.length - 1100))) + tail.join('');
          for (const text of [first, second]) expect(Array.from(tok.encode(text, special))).to.deep.equal(tok.encodeWhole(text, special));
        },
      ),
      { seed: 21, numRuns: 200 },
    );
    const s = tok.cacheStats().prefixResume!;
    expect(s.resumed).to.be.greaterThan(100);
    expect(s.resumedChars).to.be.greaterThan(0);
  });

  it('a completions prompt sharing a long start is only tokenized past its last cut, and says which prefix was cached', () => {
    const tok = make();
    const doc = 'Routing requests to engines with cached prefixes saves prefill time. '.repeat(60);
    tok.encodeTracked(`${doc}Question one?`, true);
    const before = tok.cacheStats().encodedChars;
    const t = tok.encodeTracked(`${doc}Question two, longer?`, true);
    const encoded = tok.cacheStats().encodedChars - before;
    expect(encoded).to.be.lessThan(300 + 30);
    expect(t.stable.length).to.equal(2);
    const [chars, ids] = t.stable as [number, number];
    expect(chars).to.be.greaterThan(doc.length - 300);
    // The ids of the stable prefix are the whole-text encoding's (special prefix included).
    const whole = tok.encodeWhole(t.text, true);
    expect(Array.from(t.ids.slice(0, ids))).to.deep.equal(whole.slice(0, ids));
  });

  it('common prefix length is exact across chunk boundaries', () => {
    fc.assert(
      fc.property(fc.nat({ max: 20_000 }), fc.nat({ max: 5 }), (n, extra) => {
        const a = 'ab'.repeat(10_000) + 'x'.repeat(extra);
        const b = a.slice(0, n) + (n < a.length ? String.fromCharCode(a.charCodeAt(n) + 1) : '') + 'y';
        expect(commonPrefixLength(a, b)).to.equal(Math.min(n, a.length));
        expect(commonPrefixLength(a, a)).to.equal(a.length);
      }),
      { seed: 3, numRuns: 200 },
    );
  });
});

describe('tokenization: added-token finder', () => {
  it('finds what a longest-first alternation regex finds (shared and mixed leading characters)', () => {
    for (const tokens of [
      ['<|user|>', '<|end|>', '<s>', '</s>', '<|u'],
      ['<s>', '[INST]', '[/INST]', '<<SYS>>'],
    ]) {
      const finder = new AddedTokenFinder(tokens);
      const re = new RegExp(
        [...tokens]
          .sort((a, b) => b.length - a.length)
          .map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('|'),
        'g',
      );
      fc.assert(
        fc.property(
          fc.array(fc.constantFrom(...tokens, '<', '|', 'user', '>', '/', 's', 'x ', '[', ']', 'INST'), { maxLength: 30 }),
          (parts) => {
            const text = parts.join('');
            const got: string[] = [];
            for (let m = finder.next(text, 0), at = 0; m !== undefined; at = m.index + m.token.length, m = finder.next(text, at))
              got.push(`${m.index}:${m.token}`);
            const want = [...text.matchAll(re)].map((m) => `${m.index}:${m[0]}`);
            expect(got).to.deep.equal(want);
          },
        ),
        { seed: 9, numRuns: 300 },
      );
    }
  });
});
