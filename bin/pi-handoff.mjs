#!/usr/bin/env node
// The `pi-handoff` command (see src/cli/cli.ts, or `pi-handoff --help`).
//
// Plain JavaScript with nothing newer than what old Node versions parse, so that on a Node too
// old for Pi it can still say so in one sentence instead of failing with a syntax error.
// The CLI itself is TypeScript (erasable syntax only), which Node loads through native-loader.mjs,
// also from under node_modules, where an installed copy lives and Node would strip nothing. Every
// Node the `engines` field allows has what that needs (decision 0021); another says so in one sentence.
import module from "node:module";
import process from "node:process";
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

// Node loads the TypeScript itself, installed or not, with its stripped form kept beside the
// compile cache (native-loader.mjs).
const { canLoadTypeScript, installTypeScriptLoader, strippedCacheDir } = await import("./native-loader.mjs");
if (!canLoadTypeScript()) {
  process.stderr.write(
    `pi-handoff: needs Node.js 22.19 or later (of Node 23: 23.5 or later, the first with module.registerHooks, which loads this package's TypeScript), but this is Node.js ${process.versions.node}; run it with a newer node.\n`,
  );
  process.exit(1);
}
installTypeScriptLoader(new URL("../", import.meta.url).href, strippedCacheDir());
const cli = await import(new URL("../src/cli/cli.ts", import.meta.url).href);
process.exitCode = await cli.main(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  execPath: process.execPath,
  ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
});
