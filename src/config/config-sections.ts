/**
 * Every top-level section of the config document, in one list: config/ attaches a key to
 * each feature's own schema (the feature folder owns its fields, defaults and validation;
 * nothing below config/ imports config/). To add a section: export a zod schema with
 * defaults from the feature (accepting `undefined` when the section may be left out) and
 * add one line here; `RouterConfig[key]` is then typed from the schema and validated with
 * field-path errors like every other section.
 */
import { admissionSchema } from '../admission/admission-config.js';
import { dataLayerSchema } from '../datalayer/data-layer-config.js';
import { engineMetricsSchema } from '../datalayer/engine-metrics-config.js';
import { discoverySchema } from '../discovery/discovery-config.js';
import { endpointsSchema } from '../endpoints/endpoint-config.js';
import { healthSchema } from '../health/health-config.js';
import { replicationSchema } from '../replication/replication-config.js';
import { requestsSchema } from '../request/requests-config.js';
import { telemetrySchema } from '../telemetry/telemetry-config.js';
import type { ConfigSection } from './config-section.js';
import { pluginsSection, schedulingProfilesSection } from './sections/plugin-graph.js';
import { routingSections } from './sections/routing.js';
import { serverSection } from './sections/server.js';
import { trafficTraceSection } from './sections/traffic-trace.js';

export const CONFIG_SECTIONS = [
  ...routingSections,
  serverSection,
  { key: 'requests', schema: requestsSchema },
  { key: 'endpoints', schema: endpointsSchema },
  { key: 'discovery', schema: discoverySchema },
  { key: 'engineMetrics', schema: engineMetricsSchema },
  { key: 'dataLayer', schema: dataLayerSchema },
  { key: 'telemetry', schema: telemetrySchema },
  pluginsSection,
  schedulingProfilesSection,
  { key: 'health', schema: healthSchema },
  { key: 'admission', schema: admissionSchema },
  { key: 'replication', schema: replicationSchema },
  trafficTraceSection,
] as const satisfies readonly ConfigSection[];
