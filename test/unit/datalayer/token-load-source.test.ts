/** TokenLoadSource: the batched snapshot refreshes only changed endpoints and still reads what the model says. */
import { expect } from 'chai';
import type { Endpoint, RouteDecision, RouteRequest } from '../../../src/core/types.js';
import { OutputLengthLearner, TokenLoadModel } from '../../../src/datalayer/token-load-model.js';
import { TokenLoadSource } from '../../../src/datalayer/token-load-source.js';
import { newLoadScratch } from '../../../src/endpoints/load.js';
import type { CycleState } from '../../../src/framework/types.js';
import { seededRng } from '../../../src/util/rng.js';

describe('TokenLoadSource.enrichAllInPlace', () => {
  it('writes model.pendingTokens for every slot over seeded routing, first bytes, completions, two slot layouts and a retain', () => {
    const model = new TokenLoadModel(new OutputLengthLearner({ priorTokens: 50, alpha: 0.1, maxModels: 4 }));
    const src = new TokenLoadSource(model);
    const eps = Array.from({ length: 8 }, (_, index) => ({ id: `e${index}`, index }) as unknown as Endpoint);
    const layoutA = eps.map((endpoint) => ({ endpoint, load: newLoadScratch() }));
    const layoutB = [...eps].reverse().map((endpoint) => ({ endpoint, load: newLoadScratch() }));
    const rng = seededRng(3);
    const open: { request: RouteRequest; decision: RouteDecision }[] = [];
    for (let step = 0; step < 600; step++) {
      const r = rng.int(10);
      if (r < 5) {
        const endpoint = eps[rng.int(eps.length)]!;
        const prefill = rng.next() < 0.2 ? eps[rng.int(eps.length)]! : undefined;
        const request = { requestId: `r${step}`, model: 'm', promptTokens: 10 + rng.int(500), promptChars: 400 } as RouteRequest;
        const decision = {
          endpoint,
          matchedChars: rng.int(400),
          ...(prefill !== undefined ? { disagg: { prefill, prefillCachedTokens: rng.int(10) } } : {}),
        } as unknown as RouteDecision;
        src.onRouted({ request } as CycleState, decision);
        open.push({ request, decision });
      } else if (r < 7 && open.length > 0) {
        src.onFirstByte(open[rng.int(open.length)]!.request);
      } else if (r < 9 && open.length > 0) {
        const t = open.splice(rng.int(open.length), 1)[0]!;
        src.onCompleted(t.request, t.decision, { aborted: false, completionTokens: rng.int(100) });
      } else if (step % 97 === 0) {
        src.onEndpointsChanged(eps);
      }
      const slots = step % 3 === 0 ? layoutB : layoutA;
      src.enrichAllInPlace(slots);
      for (const s of slots) expect(s.load.pendingTokens, `step ${step} ${s.endpoint.id}`).to.equal(model.pendingTokens(s.endpoint.id));
    }
    expect(eps.some((e) => model.pendingTokens(e.id) > 0)).to.equal(true);
  });
});
