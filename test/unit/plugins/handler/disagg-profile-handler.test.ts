/**
 * The disaggregation handler inside a real scheduler built from examples/router-pd.yaml
 * (role filters, prefix index, load scorers): decode first, the decider's conditions, the
 * prefill pick by affinity, conditional decode, accounting on both engines, and how the
 * decision reports it (summary header, /debug/decisions record, span attributes, metric).
 */
import { expect } from 'chai';
import { createScheduler } from '../../../../src/compose/create-scheduler.js';
import { loadConfigFile } from '../../../../src/config/load-config-file.js';
import type { RouterConfig } from '../../../../src/config/types.js';
import { RouterError } from '../../../../src/core/errors.js';
import type { RouteRequest } from '../../../../src/core/types.js';
import type { Scheduler } from '../../../../src/scheduling/scheduler.js';
import { ATTR, decisionSpanAttributes } from '../../../../src/telemetry/decision-span.js';
import { formatDecisionSummary, parseDecisionSummary } from '../../../../src/extproc/decision-header.js';
import { RecentDecisions } from '../../../../src/telemetry/recent-decisions.js';
import { ManualClock } from '../../../../src/util/clock.js';
import { seededRng } from '../../../../src/util/rng.js';
import { exampleFile } from '../../config/config-helpers.js';
import { request, text } from '../../builders.js';

const PREFILL = ['127.0.0.1:8101', '127.0.0.1:8102'];
const DECODE = ['127.0.0.1:8201', '127.0.0.1:8202'];

type HandlerParams = Record<string, unknown>;

function pdConfig(params: HandlerParams = {}, endpoints?: RouterConfig['endpoints']): RouterConfig {
  const base = loadConfigFile(exampleFile('router-pd.yaml'), {});
  const plugins = base.plugins!.map((p) =>
    p.type === 'disagg-profile-handler' ? { ...p, parameters: { ...(p.parameters as object), ...params } } : p,
  );
  return { ...base, plugins, ...(endpoints !== undefined ? { endpoints } : {}) } as RouterConfig;
}

/** The plugin graph (built by createScheduler) validates the changed parameters. */
function scheduler(params: HandlerParams = {}, endpoints?: RouterConfig['endpoints']): Scheduler {
  return createScheduler(pdConfig(params, endpoints), { clock: new ManualClock(0), rng: seededRng(1) });
}

/** A prompt of `tokens` estimated tokens (4 characters each). */
function prompt(seed: number, tokens: number, over: Partial<RouteRequest> = {}): RouteRequest {
  return request({ prefix: text(seed, tokens * 4), ...over });
}

describe('disagg-profile-handler', () => {
  it('a long uncached prompt goes to a decode engine with prefill split off onto a prefill engine', () => {
    const s = scheduler();
    const t = s.route(prompt(1, 2000));
    const d = t.decision;
    expect(DECODE).to.include(d.endpoint.id);
    expect(d.profile).to.equal('decode');
    expect(d.disagg?.why).to.equal('split');
    expect(PREFILL).to.include(d.disagg?.prefill?.id);
    expect(d.disagg?.uncachedTokens).to.equal(2000);
    expect(
      d.fallbacks.every((f) => DECODE.includes(f.id)),
      'fallbacks stay decode engines',
    ).to.equal(true);
    expect(d.notes?.some((n) => n.startsWith('pd: split prefill='))).to.equal(true);
  });

  it('the same prompt again is cached on its decode engine and skips the prefill leg', () => {
    const s = scheduler();
    const r = prompt(2, 2000);
    const first = s.route(r);
    first.finish({ aborted: false, status: 200 });
    const again = s.route({ ...r, requestId: 'again' });
    expect(again.decision.endpoint.id).to.equal(first.decision.endpoint.id, 'decode picks the engine holding the prompt');
    expect(again.decision.disagg?.why).to.equal('cached');
    expect(again.decision.disagg?.prefill).to.equal(undefined);
    expect(again.decision.disagg?.uncachedTokens).to.be.below(256);
  });

  it('a short prompt is served aggregated (short-prompt)', () => {
    const d = scheduler().route(prompt(3, 200)).decision;
    expect(DECODE).to.include(d.endpoint.id);
    expect(d.disagg?.why).to.equal('short-prompt');
  });

  it('the prefill engine is chosen by prefix affinity (split: always, so a cached decode engine still splits)', () => {
    const s = scheduler({ split: 'always' });
    const r = prompt(4, 2000);
    const first = s.route(r);
    first.finish({ aborted: false, status: 200 });
    const second = s.route({ ...r, requestId: 'second' });
    expect(second.decision.disagg?.why).to.equal('split');
    expect(second.decision.disagg?.prefill?.id).to.equal(first.decision.disagg?.prefill?.id);
    expect(second.decision.disagg?.prefillCachedTokens).to.be.above(1500);
    expect(second.decision.disagg?.prefillReason).to.equal('affinity');
  });

  it('split: never serves everything aggregated; split: always splits short prompts too', () => {
    expect(scheduler({ split: 'never' }).route(prompt(5, 2000)).decision.disagg?.why).to.equal('never');
    expect(scheduler({ split: 'always' }).route(prompt(5, 10)).decision.disagg?.why).to.equal('split');
  });

  it('a fleet without prefill engines is served aggregated (no-prefill-engine)', () => {
    const d = scheduler({}, [
      { address: '127.0.0.1:8201', pool: 'default', models: [], role: 'decode' },
      { address: '127.0.0.1:8202', pool: 'default', models: [] },
    ]).route(prompt(6, 2000)).decision;
    expect(d.disagg?.why).to.equal('no-prefill-engine');
    expect(d.disagg?.prefill).to.equal(undefined);
  });

  it('a prefill pick with more prefill queued than the decode engine serves the request aggregated; the prefill claim ends at the first byte', () => {
    const s = scheduler();
    const held = [s.route(prompt(10, 2000)), s.route(prompt(11, 2000))];
    expect(held.map((t) => t.decision.disagg?.why)).to.deep.equal(['split', 'split']);
    expect(new Set(held.map((t) => t.decision.disagg?.prefill?.id)).size).to.equal(2, 'token load spreads prefill');
    const third = s.route(prompt(12, 2000));
    expect(third.decision.disagg?.why, '2,000 queued + 2,000 on the prefill pick against 0 + 2,000 on decode').to.equal(
      'prefill-saturated',
    );
    const p = s.registry.byId(held[0]!.decision.disagg!.prefill!.id)!;
    expect(s.registry.inflight.promptTokens(p.index)).to.equal(2000);
    expect(s.registry.inflight.promptTokens(held[0]!.decision.endpoint.index), 'decode engine does not prefill').to.be.at.most(2000);
    held[0]!.firstByte!();
    expect(s.registry.inflight.promptTokens(p.index)).to.equal(0);
    expect(s.route(prompt(13, 2000)).decision.disagg?.why).to.equal('split');
  });

  it('once the decode engines have as much prefill queued as the prefill pool, long prompts are split again (no clock: nothing drains)', () => {
    const s = scheduler();
    const whys = [10, 11, 12, 13, 14].map((i) => s.route(prompt(40 + i, 2000)).decision.disagg?.why);
    expect(whys).to.deep.equal(['split', 'split', 'prefill-saturated', 'prefill-saturated', 'split']);
  });

  it('the absolute bound saturates a prefill pick however busy the decode engine is', () => {
    const s = scheduler({ maxPrefillPendingTokens: 1000 });
    const whys = [1, 2, 3, 4, 5].map((i) => s.route(prompt(60 + i, 2000)).decision.disagg?.why);
    expect(whys).to.deep.equal(['split', 'split', 'prefill-saturated', 'prefill-saturated', 'prefill-saturated']);
  });

  it('Prefer: if-available gets PRECONDITION_FAILED when the decode engine lacks the prompt, and is served when it holds it', () => {
    const s = scheduler();
    const r = prompt(20, 2000);
    let caught: unknown;
    try {
      s.route({ ...r, conditionalDecode: true });
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(RouterError);
    expect((caught as RouterError).code).to.equal('PRECONDITION_FAILED');
    s.route(r).finish({ aborted: false, status: 200 });
    const ok = s.route({ ...r, requestId: 'cond', conditionalDecode: true });
    expect(ok.decision.disagg?.why).to.equal('cached');
    expect(scheduler().route(prompt(21, 100, { conditionalDecode: true })).decision.disagg?.why).to.equal('short-prompt');
  });

  it('the decision header, the /debug/decisions record and the span name both engines and why', () => {
    const s = scheduler();
    const req = prompt(30, 2000);
    const d = s.route(req).decision;
    const h = parseDecisionSummary(formatDecisionSummary(d));
    expect(h).to.deep.include({ ep: d.endpoint.id, pd: 'split', prefill: d.disagg!.prefill!.id });
    const recent = new RecentDecisions(4);
    recent.record(req, d);
    const rec = recent.latest(1)[0]!;
    expect(rec.disagg).to.deep.include({ why: 'split', prefill: d.disagg!.prefill!.id, uncachedTokens: 2000 });
    const attrs = decisionSpanAttributes(req, d);
    expect(attrs[ATTR.pdWhy]).to.equal('split');
    expect(attrs[ATTR.pdPrefillEndpoint]).to.equal(d.disagg!.prefill!.id);
    const json = JSON.parse(JSON.stringify(d)) as { disagg: { why: string } };
    expect(json.disagg.why).to.equal('split');
  });
});
