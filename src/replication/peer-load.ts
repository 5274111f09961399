/**
 * The other replicas' load on each engine, added to this replica's own accounting: a load
 * source of the data layer (registered last, after the token-load model), so every scorer
 * sees fleet-wide in-flight counts and token load without knowing about replication.
 *
 * Each peer's latest report replaces its previous one (a report is a full picture, not an
 * increment, so a lost report costs nothing). A peer whose last report is older than
 * `peerTimeoutMs` by this replica's clock (receive time: no cross-host clock comparison)
 * is dropped, so a dead replica's load vanishes within one timeout. The sums per engine are
 * rebuilt by `refresh` (the service calls it every load interval), not per report, so a
 * storm of reports costs O(1) each and reading on the decision path is one map lookup.
 */
import type { Endpoint } from '../core/types.js';
import type { LoadSnapshot, MutableLoadSnapshot } from '../endpoints/load.js';
import type { LoadSource } from '../endpoints/registry.js';
import type { EndpointLoadShare, LoadReport } from './wire-codec.js';

interface Sum {
  inflight: number;
  prefilling: number;
  prompt: number;
  pending: number;
}

interface Peer {
  readonly atMs: number;
  readonly endpoints: readonly EndpointLoadShare[];
}

export interface PeerLoadStats {
  readonly peers: number;
  readonly reportsAccepted: number;
  /** Reports refused because `maxPeers` distinct peers are already tracked. */
  readonly reportsRefused: number;
  readonly peersExpired: number;
}

export class PeerLoadTable implements LoadSource {
  readonly name = 'replication-peer-load';
  private readonly peers = new Map<string, Peer>();
  private sums = new Map<string, Sum>();
  private accepted = 0;
  private refused = 0;
  private expired = 0;
  private dirty = false;

  constructor(
    private readonly peerTimeoutMs: number,
    private readonly maxPeers = 256,
  ) {}

  /** Takes a peer's report received at `nowMs` (this replica's clock); counted at the next `refresh`. */
  ingest(report: LoadReport, nowMs: number): void {
    if (!this.peers.has(report.replicaId) && this.peers.size >= this.maxPeers) {
      this.refused++;
      return;
    }
    this.peers.set(report.replicaId, { atMs: nowMs, endpoints: report.endpoints });
    this.accepted++;
    this.dirty = true;
  }

  /** Drops peers silent for longer than the timeout and rebuilds the sums. Returns how many peers went. */
  refresh(nowMs: number): number {
    let gone = 0;
    for (const [id, p] of this.peers) {
      if (nowMs - p.atMs > this.peerTimeoutMs) {
        this.peers.delete(id);
        gone++;
      }
    }
    this.expired += gone;
    if (gone > 0 || this.dirty) this.rebuild();
    return gone;
  }

  /** Forgets every peer (this replica lost NATS: their numbers stop being news). */
  clear(): void {
    if (this.peers.size === 0) return;
    this.peers.clear();
    this.rebuild();
  }

  /** Peers with a fresh report. */
  peerIds(): string[] {
    return [...this.peers.keys()].sort();
  }

  /** The peers' summed contribution to one engine (undefined = none). */
  peerLoad(endpointId: string): Readonly<Sum> | undefined {
    return this.sums.get(endpointId);
  }

  stats(): PeerLoadStats {
    return { peers: this.peers.size, reportsAccepted: this.accepted, reportsRefused: this.refused, peersExpired: this.expired };
  }

  enrich(endpoint: Endpoint, base: LoadSnapshot): LoadSnapshot {
    const s = this.sums.get(endpoint.id);
    if (s === undefined) return base;
    return {
      ...base,
      inflightRequests: base.inflightRequests + s.inflight,
      prefillingRequests: (base.prefillingRequests ?? base.inflightRequests) + s.prefilling,
      inflightPromptTokens: base.inflightPromptTokens + s.prompt,
      pendingTokens: base.pendingTokens + s.pending,
    };
  }

  enrichInPlace(endpoint: Endpoint, snap: MutableLoadSnapshot): void {
    const s = this.sums.get(endpoint.id);
    if (s === undefined) return;
    snap.prefillingRequests = (snap.prefillingRequests ?? snap.inflightRequests) + s.prefilling;
    snap.inflightRequests += s.inflight;
    snap.inflightPromptTokens += s.prompt;
    snap.pendingTokens += s.pending;
  }

  private rebuild(): void {
    this.dirty = false;
    const sums = new Map<string, Sum>();
    for (const p of this.peers.values()) {
      for (const e of p.endpoints) {
        let s = sums.get(e.endpointId);
        if (s === undefined) {
          s = { inflight: 0, prefilling: 0, prompt: 0, pending: 0 };
          sums.set(e.endpointId, s);
        }
        s.inflight += e.inflightRequests;
        s.prefilling += e.prefillingRequests;
        s.prompt += e.inflightPromptTokens;
        s.pending += e.pendingTokens;
      }
    }
    this.sums = sums;
  }
}
