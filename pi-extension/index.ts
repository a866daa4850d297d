/**
 * The extension as Pi loads it (package.json `pi.extensions`). Pi evaluates an extension's modules
 * through jiti, again on every start and outside Node's compile cache: for this package's modules
 * that was about 0.3 s of every Pi's start, a handoff's child included. So this entry has Node's
 * own loader load the adapter (`./extension.ts`) and everything it imports (bin/native-loader.mjs),
 * and hands those files the host packages Pi gave this one. Where Node cannot, jiti loads
 * `./extension.ts` as before. (Pi names an extension `index.ts` after its folder: `pi-extension`.)
 *
 * Invariants:
 * - The files loaded natively import Pi's packages as the very instances jiti gave this entry
 *   (never a copy from node_modules): the host modules below are every host package they import
 *   at run time (test/unit/ownership-rules.test.ts holds them to it).
 * - The hooks are registered once per process, however often Pi loads this entry; on /reload the
 *   factory runs again over the modules loaded first (as on every runtime replacement). After an
 *   update of this package, a restart of Pi loads the new code.
 * - It decides nothing: that is the adapter's (`./extension.ts`) and `src/`'s.
 */
import * as piCodingAgent from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import * as piTui from "@earendil-works/pi-tui";
import * as typebox from "typebox";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { installTypeScriptLoader, strippedCacheDir } from "../bin/native-loader.mjs";

/** The host packages the natively loaded files import at run time, by specifier. */
export const HOST_MODULES: Record<string, object> = {
  "@earendil-works/pi-coding-agent": piCodingAgent,
  "@earendil-works/pi-tui": piTui,
  typebox,
};

type Factory = (pi: ExtensionAPI) => void | Promise<void>;

/** The adapter's factory through Node's loader, or undefined where this Node cannot load it so. */
function loadNatively(): Factory | undefined {
  const root = new URL("../", import.meta.url).href;
  if (!installTypeScriptLoader(root, strippedCacheDir(), HOST_MODULES)) return undefined;
  const adapter = fileURLToPath(new URL("./extension.ts", import.meta.url));
  // Node's own require (jiti's would evaluate the file itself): it loads an ES module synchronously.
  const loaded = createRequire(import.meta.url)(adapter) as { default: Factory };
  return loaded.default;
}

export default async function handoffWorktreeEntry(pi: ExtensionAPI): Promise<void> {
  let factory: Factory | undefined;
  try {
    factory = loadNatively();
  } catch {
    // Node could not load it (a Pi on a runtime without its module loader): jiti can.
    factory = undefined;
  }
  factory ??= ((await import("./extension.ts")) as { default: Factory }).default;
  await factory(pi);
}
