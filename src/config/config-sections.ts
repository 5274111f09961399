/**
 * Every top-level section of the config document, in one list. To add a section for a
 * subsystem (e.g. `discovery:`): write a file exporting `{ key, schema } as const satisfies
 * ConfigSection` (a zod schema with defaults, accepting `undefined` when the section may be
 * left out) and add it to this list; `RouterConfig[key]` is then typed from the schema and
 * validated with field-path errors like every other section.
 */
import { cacheAwareSection, loadSection } from '../plugins/presets/shorthand.js';
import { discoverySection } from './sections/discovery.js';
import { endpointsSection } from './sections/endpoints.js';
import { engineMetricsSection } from './sections/engine-metrics.js';
import { pluginsSection, schedulingProfilesSection } from './sections/plugin-graph.js';
import { requestsSection } from './sections/requests.js';
import { routingSections } from './sections/routing.js';
import { serverSection } from './sections/server.js';
import { telemetrySection } from './sections/telemetry.js';
import { healthSection } from './sections/health.js';
import { admissionSection } from './sections/admission.js';
import { replicationSection } from './sections/replication.js';
import { trafficTraceSection } from './sections/traffic-trace.js';

export const CONFIG_SECTIONS = [
  ...routingSections,
  serverSection,
  requestsSection,
  endpointsSection,
  discoverySection,
  engineMetricsSection,
  telemetrySection,
  pluginsSection,
  schedulingProfilesSection,
  cacheAwareSection,
  loadSection,
  healthSection,
  admissionSection,
  replicationSection,
  trafficTraceSection,
] as const;
