/**
 * Writes a small, deterministic Hugging Face tokenizer (byte-level BPE trained here on a
 * fixed corpus) plus a tokenizer_config.json with a chat template, in the layout of a model
 * directory. Unit tests and the simulator use it where a real model's files are not needed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const TINY_CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

export const TINY_SPECIALS = ['<s>', '</s>', '<unk>', '<pad>', '<|system|>', '<|user|>', '<|assistant|>', '<|end|>'];

/** GPT-2's reversible byte → printable character map. */
function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n);
      n++;
    }
  }
  const out = new Array<string>(256);
  for (let i = 0; i < bs.length; i++) out[bs[i]!] = String.fromCharCode(cs[i]!);
  return out;
}

const CORPUS =
  'You are a helpful assistant. Answer the question using the documents below. The quick brown fox jumps over the lazy dog. ' +
  'def main(): return the value of the function in the module; import os, sys, json. Routing requests to engines with cached prefixes ' +
  'saves prefill time and the first token comes sooner. Please summarise the following report in three sentences. ';

/** Trains `merges` byte-level BPE merges on the corpus (words split on spaces, GPT-2 style). */
export function tinyTokenizerJson(merges = 300): Record<string, unknown> {
  const b2u = bytesToUnicode();
  const vocab = new Map<string, number>();
  for (const [i, s] of TINY_SPECIALS.entries()) vocab.set(s, i);
  for (let b = 0; b < 256; b++) vocab.set(b2u[b]!, TINY_SPECIALS.length + b);
  const words = CORPUS.split(/(?= )/).map((w) => [...Buffer.from(w, 'utf8')].map((b) => b2u[b]!));
  const mergeList: string[] = [];
  for (let m = 0; m < merges; m++) {
    const counts = new Map<string, number>();
    for (const w of words)
      for (let i = 0; i + 1 < w.length; i++) {
        const k = `${w[i]} ${w[i + 1]}`;
        counts.set(k, (counts.get(k) ?? 0) + 1);
      }
    let best = '';
    let bestN = 1;
    for (const [k, n] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : 1)))
      if (n > bestN) {
        best = k;
        bestN = n;
      }
    if (best === '') break;
    const [a, b] = best.split(' ') as [string, string];
    mergeList.push(best);
    vocab.set(a + b, vocab.size);
    for (const w of words) for (let i = 0; i + 1 < w.length; i++) if (w[i] === a && w[i + 1] === b) w.splice(i, 2, a + b);
  }
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: TINY_SPECIALS.map((s, i) => ({
      id: i,
      content: s,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] } },
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(vocab),
      merges: mergeList,
    },
  };
}

/** Writes tokenizer.json + tokenizer_config.json into `dir` (created). */
export function writeTinyTokenizer(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tinyTokenizerJson()));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'PreTrainedTokenizerFast',
      bos_token: '<s>',
      eos_token: '</s>',
      pad_token: '<pad>',
      unk_token: '<unk>',
      chat_template: TINY_CHAT_TEMPLATE,
    }),
  );
  return dir;
}
