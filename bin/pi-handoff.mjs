#!/usr/bin/env node
// The `pi-handoff` command (see src/recovery/cli.ts, or `pi-handoff --help`).
//
// Plain JavaScript with nothing newer than what old Node versions parse, so that on a Node too
// old for Pi it can still say so in one sentence instead of failing with a syntax error.
// The CLI itself is TypeScript (erasable syntax only). From a checkout, Node strips its types
// itself (on by default, without a warning, since 22.18); Node refuses to strip types from files
// under node_modules, which is where an installed copy of this package lives, so jiti loads it
// there (about half a second more per run).
import module from "node:module";
import { join, sep } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { MINIMUM, tooOld } from "./node-version.mjs";

if (tooOld(process.versions.node)) {
  process.stderr.write(
    `pi-handoff: needs Node.js ${MINIMUM.join(".")} or later (like Pi itself), but this is Node.js ${process.versions.node}; run it with a newer node.\n`,
  );
  process.exit(1);
}

// Node keeps the compiled modules in its compile cache (NODE_COMPILE_CACHE, else in the temp dir;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off), the one Pi uses for itself: later runs start faster.
module.enableCompileCache();

const entry = new URL("../src/recovery/cli.ts", import.meta.url);
const installed = fileURLToPath(entry).split(sep).includes("node_modules");
let cli;
if (!installed && process.features.typescript) {
  // Node's compile cache keeps compiled code, not the stripped TypeScript: ts-cache.mjs keeps that
  // beside it (and not when the compile cache is off).
  const cacheDir = module.getCompileCacheDir?.();
  if (cacheDir !== undefined) {
    const { installStripCache } = await import("./ts-cache.mjs");
    installStripCache(new URL("../src/", import.meta.url).href, join(cacheDir, "pi-handoff-ts"));
  }
  cli = await import(entry.href);
} else {
  const { createJiti } = await import("jiti");
  cli = await createJiti(import.meta.url).import(entry.href);
}
process.exitCode = await cli.main(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  execPath: process.execPath,
});
