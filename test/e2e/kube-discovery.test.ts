/**
 * Membership at run time with real processes: a real kube-apiserver + etcd, simulated
 * engines as "pods" on 127.0.0.2…, the router discovering them by label selector and writing
 * Envoy's EDS file, Envoy (override-host-eds) in front (test/kit/kube-membership.ts).
 * Asserts the bounds: scaling 2 -> 4 Ready pods puts traffic on the new engines within
 * 2 s; deleting a pod stops picks to it within 2 s and its in-flight requests finish; the
 * router survives the API server restarting (no failed request, and it follows new pods).
 */
import { expect } from 'chai';
import { runKubeMembership } from '../kit/kube-membership.js';
import { envoyBinary, kubeBinaries, requireComponents, routerBuild, simEngineBuild } from '../kit/require-component.js';

describe('e2e: Kubernetes discovery through Envoy (real kube-apiserver)', function () {
  this.timeout(180_000);

  before(function () {
    requireComponents(this, ...kubeBinaries(), envoyBinary(), routerBuild(), simEngineBuild());
  });

  it('scale 2 -> 4, delete one, restart the API server: traffic follows within the bounds', async () => {
    const r = await runKubeMembership({ log: (l) => console.log(`      ${l}`) });
    expect(r.scaleUpMs, 'new engines serve within 2 s of turning Ready').to.be.below(2000);
    expect(r.stopPicksMs, 'no picks to a deleted pod 2 s after the delete').to.be.below(2000);
    expect(r.inflightAtDelete, 'the deleted engine had requests in flight').to.be.greaterThan(0);
    expect(r.inflightFailed, 'in-flight requests at the delete finish').to.equal(0);
    expect(r.requestsDuringOutage, 'traffic ran during the outage').to.be.greaterThan(0);
    expect(r.failedDuringOutage, 'no request fails while the API server is down').to.equal(0);
    expect(r.afterRestartMs, 'a pod added after the restart gets traffic').to.be.below(10_000);
    expect(r.failedRequests).to.equal(0);
  });
});
