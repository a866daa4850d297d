// A cache of the CLI's TypeScript with its types stripped, beside Node's compile cache.
//
// Node strips the types of every .ts file it loads, on every run, and does not keep the result
// (its compile cache keeps only the compiled JavaScript): for the CLI's hundred-odd modules that is
// most of a `pi-handoff` start. This load hook keeps each stripped file, named by a hash of the
// Node version and the file's bytes, so an edited file is stripped again and an unchanged one never
// is. It only ever serves what Node's own type stripping produced (whitespace in place of the
// types, so every line and column is where it was in the .ts file).
//
// Plain JavaScript with nothing newer than what old Node versions parse (see pi-handoff.mjs); used
// only on a Node that strips types itself and has `module.registerHooks`.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import module from "node:module";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/**
 * Serves the .ts files under `root` (a file: URL ending in "/") from `dir`, stripping and keeping
 * those not there yet. Anything that goes wrong leaves the file to Node's own loading.
 */
export function installStripCache(root, dir) {
  if (typeof module.registerHooks !== "function" || typeof module.stripTypeScriptTypes !== "function") return;
  let made = false;
  module.registerHooks({
    load(url, context, nextLoad) {
      if (!url.startsWith(root) || !url.endsWith(".ts") || url.includes("/node_modules/"))
        return nextLoad(url, context);
      let source;
      try {
        source = readFileSync(fileURLToPath(url));
      } catch {
        return nextLoad(url, context);
      }
      const key = createHash("sha256").update(process.version).update("\0").update(source).digest("hex").slice(0, 40);
      const file = join(dir, key + ".js");
      try {
        return { format: "module", source: readFileSync(file, "utf8"), shortCircuit: true };
      } catch {
        // Not kept yet.
      }
      const stripped = strip(source.toString("utf8"));
      if (stripped === undefined) return nextLoad(url, context);
      try {
        if (!made) mkdirSync(dir, { recursive: true });
        made = true;
        const temp = file + "." + process.pid + ".tmp";
        writeFileSync(temp, stripped);
        renameSync(temp, file);
      } catch {
        // A cache that cannot be written only costs the next run the stripping.
      }
      return { format: "module", source: stripped, shortCircuit: true };
    },
  });
}

/** Node's own type stripping, without its one-time notice that the function is experimental. */
function strip(source) {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    const options = rest[0];
    const type = typeof options === "string" ? options : options && options.type;
    if (type === "ExperimentalWarning" && String(warning).includes("stripTypeScriptTypes")) return;
    return emitWarning.call(process, warning, ...rest);
  };
  try {
    return module.stripTypeScriptTypes(source, { mode: "strip" });
  } catch {
    return undefined;
  } finally {
    process.emitWarning = emitWarning;
  }
}
