import { expect } from 'chai';
import { parseSimulateArgs, SIMULATE_USAGE } from '../../../src/cli/simulate-command.js';

describe('cli: simulate arguments', () => {
  it('takes the required pair and fills defaults', () => {
    const a = parseSimulateArgs(['--trace', 't.jsonl', '--engines=16']);
    expect(a).to.deep.include({ trace: 't.jsonl', engines: 16, engineProfile: 'gpu-like', timeScale: 1, seed: 1, json: false });
    expect((a as { strategies: readonly string[] }).strategies)
      .to.include('cache-aware')
      .and.not.include('random');
  });

  it('takes options', () => {
    const a = parseSimulateArgs([
      '--trace',
      't',
      '--engines',
      '4',
      '--config',
      'r.yaml',
      '--strategies',
      'round-robin,cache-aware',
      '--time-scale',
      '0.5',
      '--seed',
      '7',
      '--json',
    ]);
    expect(a).to.deep.include({ config: 'r.yaml', strategies: ['round-robin', 'cache-aware'], timeScale: 0.5, seed: 7, json: true });
  });

  for (const [argv, why] of [
    [['--engines', '4'], 'missing --trace'],
    [['--trace', 't'], 'missing --engines'],
    [['--trace', 't', '--engines', '0'], '--engines must be an integer'],
    [['--trace', 't', '--engines', '2.5'], '--engines must be an integer'],
    [['--trace', 't', '--engines', '4', '--strategies', 'magic'], 'unknown strategy magic'],
    [['--trace', 't', '--engines', '4', '--engine-profile', 'h200'], 'unknown --engine-profile'],
    [['--trace', 't', '--engines', '4', '--time-scale', '-1'], '--time-scale'],
    [['--trace', 't', '--engines', '4', '--colour', 'x'], 'unknown option: --colour'],
    [['--trace', 't', '--engines'], 'incomplete argument'],
  ] as const) {
    it(`refuses ${argv.join(' ')}: ${why}`, () => {
      const got = parseSimulateArgs(argv);
      expect(got).to.be.a('string').that.contains(why);
    });
  }

  it("accepts the fleet simulator's other contenders by name (peers' policies, bounds)", () => {
    const a = parseSimulateArgs(['--trace', 't', '--engines', '4', '--strategies', 'cache-aware,sglang-cache-aware,clairvoyant']);
    expect(a).to.deep.include({ strategies: ['cache-aware', 'sglang-cache-aware', 'clairvoyant'] });
    expect(parseSimulateArgs(['--trace', 't', '--engines', '4', '--strategies', 'cacheroute:auto'])).to.be.a('string');
  });

  it('answers --help with the usage', () => {
    expect(parseSimulateArgs(['--help'])).to.equal(SIMULATE_USAGE);
  });
});
