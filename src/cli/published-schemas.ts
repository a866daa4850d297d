/**
 * The formats this package publishes as JSON Schema, for jq/Python users of `pi-handoff --json`
 * and for `$schema` in settings files: generated from the zod schemas, which stay the one
 * definition of each format.
 *
 * Invariants: the files under `schemas/` are exactly what `jsonSchemaFiles()` produces
 * (`npm run schemas` writes them; test/unit/published-schemas.test.ts fails when they drift).
 */
import { z } from "zod";
import { SettingsFileSchema } from "../config/schema.ts";
import {
  EnvReportSchema,
  ForecastReportSchema,
  InspectReportSchema,
  InventoryReportSchema,
} from "../inventory/report-schema.ts";
import { TreeReportSchema } from "../tree/tree-report.ts";

const PUBLISHED = {
  "inventory-report": { schema: InventoryReportSchema, title: "pi-handoff list --json" },
  "inspect-report": { schema: InspectReportSchema, title: "pi-handoff inspect --json" },
  "env-report": { schema: EnvReportSchema, title: "pi-handoff env --json" },
  "forecast-report": { schema: ForecastReportSchema, title: "pi-handoff forecast --json" },
  "tree-report": { schema: TreeReportSchema, title: "pi-handoff tree --json" },
  settings: { schema: SettingsFileSchema, title: "pi-handoff-worktree settings (handoff-worktree.json)" },
} as const;

/** File name (under `schemas/`) and its text, for every published format. */
export function jsonSchemaFiles(): Array<{ file: string; text: string }> {
  return Object.entries(PUBLISHED).map(([name, { schema, title }]) => ({
    file: `${name}.schema.json`,
    text: `${JSON.stringify({ title, ...z.toJSONSchema(schema, { io: "output" }) }, null, 2)}\n`,
  }));
}
