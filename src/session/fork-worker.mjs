// Runs the fork in a worker thread, so the parent Pi's event loop (its TUI) never blocks on it.
// Plain JavaScript: a worker starts with a bare Node loader and none of its parent's module hooks.
// The package's TypeScript is loaded as in the parent (bin/native-loader.mjs): types stripped once
// and kept beside the compile cache the parent uses, which this thread uses too, so a handoff's
// worker compiles and strips nothing its predecessors did (a cold one cost the fork step about
// 0.1 s in Pi). Pi's own session module is imported by the path the main thread found, only when
// needed. The fork module loads as soon as the worker starts, so a worker started early is warm when asked.
import module from "node:module";
import { parentPort, workerData } from "node:worker_threads";
import { installTypeScriptLoader } from "../../bin/native-loader.mjs";

const { sessionModulePath, forkModulePath, packageRootUrl, compileCacheBase, strippedCacheDir } = workerData;

// The base directory, as the parent enabled it: Node adds its version tag below it (given the
// tagged directory, it would add the tag again and share nothing).
if (typeof compileCacheBase === "string") {
  try {
    module.enableCompileCache(compileCacheBase);
  } catch {
    // Without it the modules are compiled again: slower, never different.
  }
}
installTypeScriptLoader(packageRootUrl, typeof strippedCacheDir === "string" ? strippedCacheDir : undefined);

// The fork module loads at once; Pi's session module (large) only when an older file needs Pi's
// migration, so a fork of a current file costs the worker none of Pi's memory.
const forkLoaded = import(forkModulePath);
// A load failure is reported when the fork is asked for, not as an unhandled rejection.
forkLoaded.catch(() => {});

/** Thrown when Pi's session module cannot be loaded here: the caller forks on its own thread. */
class SessionModuleUnavailable extends Error {}

async function loadSessionManager() {
  try {
    return (await import(sessionModulePath)).SessionManager;
  } catch (error) {
    throw new SessionModuleUnavailable(error instanceof Error ? error.message : String(error));
  }
}

parentPort.on("message", async (message) => {
  if (message?.type !== "fork") return;
  let forkModule;
  try {
    forkModule = await forkLoaded;
  } catch (error) {
    // The caller falls back to forking on its own thread.
    parentPort.postMessage({ type: "unavailable", message: error instanceof Error ? error.message : String(error) });
    return;
  }
  try {
    const host = { CURRENT_SESSION_VERSION: message.sessionVersion, SessionManager: loadSessionManager };
    const result = await forkModule.forkActiveBranch(message.request, host, (phase) =>
      parentPort.postMessage({ type: "phase", phase }),
    );
    parentPort.postMessage({ type: "done", result });
  } catch (error) {
    if (error instanceof SessionModuleUnavailable) {
      parentPort.postMessage({ type: "unavailable", message: error.message });
      return;
    }
    parentPort.postMessage({
      type: "error",
      name: error instanceof Error ? error.name : "Error",
      message: error instanceof Error ? error.message : String(error),
    });
  }
});
