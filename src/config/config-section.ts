/**
 * One top-level section of the config document: its key and its zod schema (defaults,
 * validation, `.describe()` docs). Sections are listed once in config-sections.ts; the
 * typed RouterConfig is inferred from that list, so a subsystem adds its configuration
 * with one file exporting a section and one line in the list.
 */
import type { z } from 'zod';

export interface ConfigSection<S extends z.ZodType = z.ZodType> {
  readonly key: string;
  /** Must accept `undefined` (section left out) unless the section is required. */
  readonly schema: S;
}
