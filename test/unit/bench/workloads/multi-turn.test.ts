import { expect } from 'chai';
import { multiTurnWorkload } from '../../../../bench/workloads/multi-turn.js';
import type { BenchRequest } from '../../../../bench/workloads/types.js';

describe('bench/workloads/multi-turn', () => {
  const params = {
    sessions: 3,
    turns: 4,
    systemPrompts: 1,
    systemPromptTokens: 20,
    userTokens: 5,
    outputTokens: 6,
    thinkMs: 500,
    arrival: { kind: 'constant' as const, qps: 2 },
    seed: 5,
  };

  for (const api of ['chat', 'completions'] as const) {
    it(`${api}: each turn extends the previous one, including the assistant reply`, () => {
      const w = multiTurnWorkload({ ...params, api });
      expect(w.requests).to.have.length(12);
      for (let s = 0; s < 3; s++) {
        const turns = [1, 2, 3, 4].map((t) => w.requests.find((r) => r.id === `multi-turn-s${s}-t${t}`) as BenchRequest);
        for (let t = 1; t < 4; t++) {
          const prev = turns[t - 1] as BenchRequest;
          const cur = turns[t] as BenchRequest;
          expect(cur.dependsOn).to.deep.equal({ afterId: prev.id, thinkMs: 500 });
          if (api === 'chat') {
            const pm = prev.messages ?? [];
            const cm = cur.messages ?? [];
            expect(cm.slice(0, pm.length)).to.deep.equal(pm);
            expect(cm[pm.length]?.role).to.equal('assistant');
            expect(cm[pm.length + 1]?.role).to.equal('user');
          } else {
            expect((cur.prompt as string).startsWith(prev.prompt as string)).to.equal(true);
          }
          // Turn t's prompt (reusable by turn t+1) holds 2t messages; the completions
          // rendering adds a one-token role tag to each, which reusableTokens leaves out.
          expect(cur.reusableTokens).to.equal(api === 'chat' ? prev.promptTokens : prev.promptTokens - 2 * t);
          expect(cur.promptTokens).to.be.greaterThan(prev.promptTokens);
        }
        expect(turns[0]?.dependsOn).to.equal(undefined);
      }
    });
  }

  it('sessions share the system prompt when systemPrompts is 1', () => {
    const w = multiTurnWorkload({ ...params, api: 'chat' });
    const firsts = w.requests.filter((r) => r.id.endsWith('-t1'));
    expect(new Set(firsts.map((r) => r.messages?.[0]?.content)).size).to.equal(1);
    expect(firsts.filter((r) => r.reusableTokens === 20)).to.have.length(2);
  });
});
