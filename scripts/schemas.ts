/**
 * `npm run schemas`: writes the published JSON Schemas (src/cli/published-schemas.ts) to schemas/.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jsonSchemaFiles } from "../src/cli/published-schemas.ts";

const dir = fileURLToPath(new URL("../schemas/", import.meta.url));
mkdirSync(dir, { recursive: true });
for (const { file, text } of jsonSchemaFiles()) {
  writeFileSync(join(dir, file), text);
  process.stdout.write(`wrote schemas/${file}\n`);
}
