/**
 * `GET /metrics`: Prometheus text exposition of this router's own registry
 * (src/telemetry/metrics.ts). Gauges backed by collect callbacks read the live state here.
 */
import type { AdminServer } from './admin-server.js';

export interface MetricsSource {
  text(): Promise<string>;
  readonly contentType: string;
}

export function registerMetricsRoutes(admin: AdminServer, metrics: MetricsSource): void {
  admin.addRoute('GET', '/metrics', async (_req, res) => {
    const body = await metrics.text();
    res.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}
