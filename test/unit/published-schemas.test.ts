/**
 * The JSON Schemas shipped in schemas/ are the ones the zod schemas produce, and they describe
 * what the code really prints and reads.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jsonSchemaFiles } from "../../src/cli/published-schemas.ts";

const SCHEMAS_DIR = join(import.meta.dirname, "..", "..", "schemas");

describe("published JSON Schemas", () => {
  it("schemas/ holds exactly the generated files (run npm run schemas after changing a format)", () => {
    const generated = jsonSchemaFiles();
    expect(readdirSync(SCHEMAS_DIR).sort()).toEqual(generated.map((entry) => entry.file).sort());
    for (const { file, text } of generated) expect(readFileSync(join(SCHEMAS_DIR, file), "utf8"), file).toBe(text);
  });

  it("the settings schema refuses unknown keys and accepts $schema, like the settings loader", () => {
    const settings = JSON.parse(readFileSync(join(SCHEMAS_DIR, "settings.schema.json"), "utf8")) as {
      additionalProperties: unknown;
      properties: Record<string, unknown>;
    };
    expect(settings.additionalProperties).toBe(false);
    expect(Object.keys(settings.properties).sort()).toEqual([
      "$schema",
      "branchPrefix",
      "check",
      "checkTimeoutMs",
      "copy",
      "env",
      "mux",
      "ports",
      "postCreate",
      "reportsTriggerTurn",
      "symlink",
      "worktreeDir",
    ]);
  });
});
