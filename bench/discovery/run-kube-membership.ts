/**
 * Repeats the Kubernetes membership scenario (test/kit/kube-membership.ts) and writes
 * bench/results/discovery-kube/{summary.md,run.json}:
 *
 *   npm run bench -- discovery-kube [--rounds 3] [--out bench/results/discovery-kube]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectRunInfo } from '../report/run-info.js';
import { portableString, writeJson } from '../report/result-files.js';
import { REPO_ROOT } from '../../test/kit/repo-paths.js';
import { runKubeMembership, type KubeMembershipResult } from '../../test/kit/kube-membership.js';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : def;
}

const rounds = Number(arg('rounds', '3'));
const out = arg('out', join(REPO_ROOT, 'bench', 'results', 'discovery-kube'));
const config = {
  rounds,
  rps: 25,
  strategy: 'cache-aware (default)',
  engines: '5 sim engines (time-scale 1) on 127.0.0.2-6',
  envoy: 'override-host-eds',
};
const info = collectRunInfo(REPO_ROOT);
const results: KubeMembershipResult[] = [];
for (let r = 0; r < rounds; r++) {
  console.log(`round ${r + 1}/${rounds}`);
  results.push(await runKubeMembership({ rps: config.rps, log: (l) => console.log(`  ${l}`) }));
}
const max = (f: (r: KubeMembershipResult) => number): number => Math.max(...results.map(f));
const list = (f: (r: KubeMembershipResult) => number): string => results.map(f).join(' / ');
const rows: [string, string, string, string][] = [
  ['scale 2 -> 4: new engines serve (ms after Ready)', list((r) => r.scaleUpMs), String(max((r) => r.scaleUpMs)), '< 2000'],
  ['delete a pod: last pick after the delete (ms)', list((r) => r.stopPicksMs), String(max((r) => r.stopPicksMs)), '< 2000'],
  [
    'delete a pod: its in-flight requests (failed)',
    results.map((r) => `${r.inflightAtDelete} (${r.inflightFailed})`).join(' / '),
    String(max((r) => r.inflightFailed)),
    '0 failed',
  ],
  ['API server down (ms)', list((r) => r.apiDownMs), String(max((r) => r.apiDownMs)), ''],
  [
    'requests during the outage (failed)',
    results.map((r) => `${r.requestsDuringOutage} (${r.failedDuringOutage})`).join(' / '),
    String(max((r) => r.failedDuringOutage)),
    '0 failed',
  ],
  ['pod added after the restart serves (ms)', list((r) => r.afterRestartMs), String(max((r) => r.afterRestartMs)), '< 10000'],
  [
    'all requests (failed)',
    results.map((r) => `${r.totalRequests} (${r.failedRequests})`).join(' / '),
    String(max((r) => r.failedRequests)),
    '0 failed',
  ],
];
const md = [
  '# Kubernetes membership: real kube-apiserver + etcd, router, Envoy EDS, sim engines',
  '',
  `Commit ${info.gitCommit ?? 'unknown'}${info.gitDirty.length > 0 ? ' (dirty)' : ''}, ${rounds} rounds, ${config.rps} req/s background stream through Envoy (${config.envoy}), ${config.engines}.`,
  'Times are measured at the client: from the API write (pods Ready / delete) to the first response from',
  '(or the start of the last request served by) the engine. Rerun: `npm run bench -- discovery-kube`.',
  `A last pick of 0 ms means no request sent after the delete (one every ${Math.round(1000 / config.rps)} ms) reached the deleted engine.`,
  '',
  '| measure | per round | worst | bound (test/e2e/kube-discovery.test.ts) |',
  '|---|---|---|---|',
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
].join('\n');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'summary.md'), portableString(md, REPO_ROOT));
writeJson(join(out, 'run.json'), { config, info, results }, REPO_ROOT);
console.log(md);
