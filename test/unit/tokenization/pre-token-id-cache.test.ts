import { expect } from 'chai';
import { Tokenizer } from '@huggingface/tokenizers';
import fc from 'fast-check';
import { ModelTokenizer } from '../../../src/tokenization/model-tokenizer.js';
import { PreTokenIdCache } from '../../../src/tokenization/pre-token-id-cache.js';
import { TINY_CHAT_TEMPLATE, tinyTokenizerJson } from '../../kit/tiny-tokenizer.js';

const CONFIG = { tokenizer_class: 'PreTrainedTokenizerFast', bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>' };

/** Llama 3's pre-tokenizer shape: a Split with its regex, then ByteLevel without a regex. */
function splitThenByteLevel(): Record<string, unknown> {
  const json = tinyTokenizerJson();
  json['pre_tokenizer'] = {
    type: 'Sequence',
    pretokenizers: [
      {
        type: 'Split',
        pattern: {
          Regex:
            "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
        },
        behavior: 'Isolated',
        invert: false,
      },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  };
  return json;
}

function make(json: Record<string, unknown>, opts: { preTokenCache?: boolean } = {}): ModelTokenizer {
  return new ModelTokenizer(new Tokenizer(json, CONFIG), json, CONFIG, TINY_CHAT_TEMPLATE, { minCachedPieceChars: 8, ...opts });
}

// Fragments chosen to hit the regexes' edge cases: contractions, runs of spaces before words
// and line ends, digits, punctuation runs, multi-byte and astral characters, CR/LF, markers.
const FRAGMENT = fc.constantFrom(
  'You are',
  ' helpful',
  "'s",
  "'LL",
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
  'naïve',
  '🙂',
  '日本語',
  ' def main():',
  'x',
  'ABC',
  '<|user|>',
  '<|end|>',
  '<s>',
  '</s>',
  '<|assistant|>',
);

describe('tokenization: pre-token id cache', () => {
  for (const [name, json] of [
    ['ByteLevel with its regex (GPT-2 shape)', tinyTokenizerJson()],
    ['Split + ByteLevel (Llama 3 shape)', splitThenByteLevel()],
  ] as const) {
    it(`${name}: ids equal the library encoding the whole text (seeded property)`, () => {
      const tok = make(json);
      expect(tok.cacheStats().preTokens, 'pre-token cache in use').to.not.equal(undefined);
      fc.assert(
        fc.property(fc.array(FRAGMENT, { maxLength: 40 }), fc.boolean(), (parts, special) => {
          const text = parts.join('');
          return JSON.stringify(tok.encode(text, special)) === JSON.stringify(tok.encodeWhole(text, special));
        }),
        { seed: 11, numRuns: 500 },
      );
      const st = tok.cacheStats().preTokens!;
      expect(st.hits).to.be.greaterThan(st.misses);
    });

    it(`${name}: random unicode text matches too (seeded property)`, () => {
      const tok = make(json);
      fc.assert(
        fc.property(
          fc.string({ unit: 'grapheme', maxLength: 120 }),
          (text) => JSON.stringify(tok.encode(text, false)) === JSON.stringify(tok.encodeWhole(text, false)),
        ),
        { seed: 12, numRuns: 400 },
      );
    });
  }

  it('new text of known words is served per pre-token: far fewer library calls than characters', () => {
    const tok = make(tinyTokenizerJson());
    const words = 'the quick brown fox jumps over the lazy dog and routes requests to engines'.split(' ');
    const text = (seed: number): string => Array.from({ length: 200 }, (_, i) => words[(i * 3 + seed) % words.length]).join(' ');
    tok.encode(text(1), false);
    const before = tok.cacheStats().preTokens!;
    const ids = tok.encode(text(2), false);
    const after = tok.cacheStats().preTokens!;
    expect(ids).to.deep.equal(tok.encodeWhole(text(2), false));
    // Only the first word (no leading space) can be new.
    expect(after.misses - before.misses).to.be.at.most(1);
    expect(after.hits - before.hits).to.be.at.least(199);
  });

  it('is not used for pipelines it cannot reproduce exactly (normalizer, prefix space, other models)', () => {
    const normalized = { ...tinyTokenizerJson(), normalizer: { type: 'NFC' } };
    const prefixed = {
      ...tinyTokenizerJson(),
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    };
    for (const json of [normalized, prefixed]) {
      expect(PreTokenIdCache.create(new Tokenizer(json, CONFIG), json)).to.equal(undefined);
      const tok = make(json);
      expect(tok.cacheStats().preTokens).to.equal(undefined);
      const text = ' hello  world\n<|user|> x';
      expect(tok.encode(text, false)).to.deep.equal(tok.encodeWhole(text, false));
    }
  });

  it('can be turned off; ids are the same either way', () => {
    const on = make(tinyTokenizerJson());
    const off = make(tinyTokenizerJson(), { preTokenCache: false });
    expect(off.cacheStats().preTokens).to.equal(undefined);
    const text = '<|system|>\nYou are a helpful assistant.  Answer 12345 times!<|end|>\n<|user|>\nnaïve 🙂<|end|>\n';
    expect(on.encode(text, false)).to.deep.equal(off.encode(text, false));
  });
});
