/** Shared helpers for the config tests. */
import { join } from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT } from '../../kit/repo-paths.js';
import { RouterError } from '../../../src/core/errors.js';

export const MINIMAL = { apiVersion: 'cacheroute/v1', endpoints: ['127.0.0.1:8001'] } as const;

export function configFixture(name: string): string {
  return join(REPO_ROOT, 'test', 'fixtures', 'configs', name);
}

export function exampleFile(name: string): string {
  return join(REPO_ROOT, 'examples', name);
}

/** Runs fn, expects BAD_CONFIG, returns the problem lines (without the header). */
export function problemsOf(fn: () => unknown): string[] {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, 'expected BAD_CONFIG').to.be.instanceOf(RouterError);
  const err = caught as RouterError;
  expect(err.code).to.equal('BAD_CONFIG');
  return err.message
    .split('\n')
    .filter((l) => l.startsWith('  - '))
    .map((l) => l.slice(4));
}
