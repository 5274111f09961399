/** Shared helpers for the request-extraction tests. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT } from '../../kit/repo-paths.js';
import { RouterError } from '../../../src/core/errors.js';
import { extractPrompt, type ExtractedPrompt, type ExtractOptions } from '../../../src/request/extract-prompt.js';

export const OPTS: ExtractOptions = { maxPrefixChars: 65_536, charsPerToken: 4 };
export const CHAT = '/v1/chat/completions';
export const COMPLETIONS = '/v1/completions';

export function bytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

export function fixture(name: string): Uint8Array {
  return readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'bodies', name));
}

export function chat(body: unknown, opts: ExtractOptions = OPTS): ExtractedPrompt {
  return extractPrompt(CHAT, bytes(body), opts);
}

export function completion(body: unknown, opts: ExtractOptions = OPTS): ExtractedPrompt {
  return extractPrompt(COMPLETIONS, bytes(body), opts);
}

/** Asserts a BAD_REQUEST whose message names `field` and contains none of `secrets`. */
export function expectBadRequest(fn: () => unknown, field: string, secrets: readonly string[] = []): RouterError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected a RouterError').to.be.instanceOf(RouterError);
  const err = caught as RouterError;
  expect(err.code).to.equal('BAD_REQUEST');
  expect(err.message).to.include(field);
  for (const s of secrets) expect(err.message).to.not.include(s);
  return err;
}
