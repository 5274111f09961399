import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../kit/repo-paths.js';

const MOCHA = join(REPO_ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
const WATCHDOG = join(REPO_ROOT, 'dist', 'test', 'kit', 'exit-watchdog.js');

/** Runs mocha on one test file with the watchdog, as npm test does, and reports how it ended. */
function runMocha(dir: string, body: string): Promise<{ code: number | null; stderr: string }> {
  const file = join(dir, `t-${Math.random().toString(36).slice(2)}.test.mjs`);
  writeFileSync(file, body);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MOCHA, '--no-config', '--require', WATCHDOG, file],
      { cwd: dir, timeout: 20_000, env: { ...process.env, CACHEROUTE_TEST_EXIT_GRACE_MS: '300' } },
      (err, _stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr });
      },
    );
  });
}

describe('test helper: exit watchdog', function () {
  this.timeout(30_000);
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'exit-watchdog-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('fails a passing run whose process a leaked server keeps alive, and names the server', async () => {
    const r = await runMocha(
      dir,
      `import { createServer } from 'node:net';
it('leaks', (done) => { createServer().listen(0, '127.0.0.1', done); });\n`,
    );
    expect(r.code).to.equal(3);
    expect(r.stderr).to.match(/still alive 300 ms after the last test/);
    expect(r.stderr).to.match(/Server listening on .*127\.0\.0\.1/);
  });

  it('lets a clean run end by itself with mocha’s own exit code', async () => {
    expect((await runMocha(dir, `it('passes', () => {});\n`)).code).to.equal(0);
    expect((await runMocha(dir, `it('fails', () => { throw new Error('no'); });\n`)).code).to.equal(1);
  });
});
