/**
 * Moving KV between engines (prefill/decode disaggregation): the cost model and the shared
 * store. Why a cost model: a split request's decode engine cannot start before the prompt's
 * KV has arrived, so whether a split pays depends on transfer time against prefill time; a
 * transfer of T tokens takes `latency + T x bytesPerToken / bandwidth`, the shape NIXL and a
 * shared-directory connector both have (a fixed setup per transfer, then bytes over a link).
 *
 * Two forms carry the KV, as in vLLM:
 * - a shared store (vLLM's ExampleConnector on a shared directory): every engine writes the
 *   prompt blocks it computes to the store, and any engine that finds leading blocks of its
 *   prompt there loads them instead of computing them; it matches by block hash (the
 *   prompt's tokens), so nothing is exchanged between the two requests;
 * - the kv_transfer_params exchange (NixlConnector): the prefill engine answers with the
 *   params naming its blocks, and the decode engine pulls them (kv-transfer-params.ts).
 * Either way the decode engine is told how many leading prompt blocks it can load
 * (SequenceSpec.externalBlocks) and charges the load to the request at admission.
 */

/** The KV-transfer part of an engine model (fields of EngineModelConfig). */
export interface KvTransferCost {
  /** Fixed cost of one transfer, ms (connection setup, handshake, metadata). */
  readonly kvTransferLatencyMs: number;
  /** KV bytes per token: 2 (K and V) x layers x KV heads x head size x bytes per value. */
  readonly kvBytesPerToken: number;
  /** Link bandwidth, GB/s (10^9 bytes per second). */
  readonly kvTransferGBps: number;
}

/**
 * The tiny CPU model of the real vLLM engine (4 layers, hidden 256, float32): 2 x 4 x 256 x 4
 * = 8,192 bytes per token (the ~15 MB ExampleConnector wrote for a 1,900-token prompt); its
 * shared directory is a local disk read at ~1 GB/s with ~2 ms per transfer (file open and
 * safetensors header per layer). Not fitted: a plausible order of magnitude.
 */
export const CPU_KV_TRANSFER: KvTransferCost = { kvTransferLatencyMs: 2, kvBytesPerToken: 8192, kvTransferGBps: 1 };

/**
 * An 8B model (32 layers, 8 KV heads of 128, fp16): 2 x 32 x 8 x 128 x 2 = 131,072 bytes per
 * token, over a 200 Gb/s RDMA NIC (25 GB/s) with ~1 ms per transfer (NIXL handshake and
 * descriptor setup): 2,000 tokens move in ~11.5 ms. Published figures, not a measurement.
 */
export const GPU_LIKE_KV_TRANSFER: KvTransferCost = { kvTransferLatencyMs: 1, kvBytesPerToken: 131_072, kvTransferGBps: 25 };

/** Time to move the KV of `tokens` tokens, ms (0 for none). */
export function kvTransferMs(cost: KvTransferCost, tokens: number): number {
  if (tokens <= 0) return 0;
  return cost.kvTransferLatencyMs + (tokens * cost.kvBytesPerToken) / (cost.kvTransferGBps * 1e6);
}

/** A store of computed KV blocks shared by engines, keyed by chained block hash. */
export interface SharedKvStore {
  /** Leading blocks of `hashes` present in the store. */
  matchPrefix(hashes: readonly number[]): number;
  /** Stores these blocks (already computed by the caller). */
  put(hashes: readonly number[]): void;
}

/** In-process store (fleet simulator, tests): a set of hashes, bounded, oldest dropped first. */
export class MemoryKvStore implements SharedKvStore {
  private readonly blocks = new Set<number>();

  constructor(private readonly maxBlocks = 1_000_000) {
    if (!Number.isInteger(maxBlocks) || maxBlocks < 1) throw new RangeError(`maxBlocks must be a positive integer, got ${maxBlocks}`);
  }

  get size(): number {
    return this.blocks.size;
  }

  matchPrefix(hashes: readonly number[]): number {
    let n = 0;
    while (n < hashes.length && this.blocks.has(hashes[n]!)) n++;
    return n;
  }

  put(hashes: readonly number[]): void {
    for (const h of hashes) {
      this.blocks.delete(h);
      this.blocks.add(h);
    }
    for (const h of this.blocks) {
      if (this.blocks.size <= this.maxBlocks) break;
      this.blocks.delete(h);
    }
  }
}
