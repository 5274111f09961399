/**
 * Keeps Envoy's engine cluster equal to the router's member set for the override-host
 * variant, through plain Envoy's file-based EDS: the router writes a DiscoveryResponse with
 * one ClusterLoadAssignment (every member as an lb endpoint) and Envoy, whose cluster reads
 * it through `path_config_source` + `watched_directory` (envoy/override-host-eds.yaml),
 * reloads it when the file is moved into place. Written at start and after every membership
 * change, always as write-temp-then-rename in the same directory (Envoy never reads a
 * half-written file). A write that fails is logged and retried on the next change.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Endpoint } from '../core/types.js';
import type { EndpointRegistry } from '../endpoints/registry.js';
import type { SourceLog } from './endpoint-source.js';

export interface EdsFileOptions {
  /** The file Envoy's `path_config_source.path` names. */
  readonly path: string;
  /** Envoy cluster name (the ClusterLoadAssignment's `cluster_name`). */
  readonly clusterName: string;
}

/** The DiscoveryResponse Envoy reads from the file, as JSON (a YAML subset). */
export function edsDocument(clusterName: string, endpoints: readonly Endpoint[], version: number): string {
  const lbEndpoints = endpoints.map((e) => ({
    endpoint: { address: { socket_address: { address: e.address, port_value: e.port } } },
  }));
  return (
    JSON.stringify(
      {
        version_info: String(version),
        resources: [
          {
            '@type': 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
            cluster_name: clusterName,
            endpoints: lbEndpoints.length > 0 ? [{ lb_endpoints: lbEndpoints }] : [],
          },
        ],
      },
      null,
      2,
    ) + '\n'
  );
}

export class EdsFileWriter {
  private version = 0;
  private off: (() => void) | undefined;

  constructor(
    private readonly opts: EdsFileOptions,
    private readonly registry: EndpointRegistry,
    private readonly log: SourceLog,
  ) {}

  /** Writes the current set and follows every change until `stop`. */
  start(): void {
    if (this.off !== undefined) return;
    this.off = this.registry.onMembershipChange((c) => this.write(c.endpoints));
    this.write(this.registry.all());
  }

  stop(): void {
    this.off?.();
    this.off = undefined;
  }

  /** How many times the file was written (tests, admin). */
  get writes(): number {
    return this.version;
  }

  private write(endpoints: readonly Endpoint[]): void {
    const { path, clusterName } = this.opts;
    const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
    try {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(tmp, edsDocument(clusterName, endpoints, this.version + 1));
      renameSync(tmp, path);
      this.version++;
    } catch (err) {
      this.log.warn('could not write the Envoy EDS file', { path, error: err instanceof Error ? err.message : String(err) });
    }
  }
}
