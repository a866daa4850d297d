// Runs the fork in a worker thread, so the parent Pi's event loop (its TUI) never blocks on it.
// Plain JavaScript: a worker starts with a bare Node loader. The TypeScript fork is loaded with
// Node's own type stripping (also for files under node_modules, which Node refuses by default),
// and Pi's own session module is imported by the path the main thread found, only when needed. The
// fork module loads as soon as the worker starts, so a worker started early is warm when asked.
import { readFileSync } from "node:fs";
import { registerHooks, stripTypeScriptTypes } from "node:module";
import { fileURLToPath } from "node:url";
import { parentPort, workerData } from "node:worker_threads";

const { sessionModulePath, forkModulePath, packageRootUrl } = workerData;

registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith(packageRootUrl) && url.endsWith(".ts")) {
      const source = readFileSync(fileURLToPath(url), "utf8");
      return { format: "module", source: stripTypeScriptTypes(source), shortCircuit: true };
    }
    return nextLoad(url, context);
  },
});

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
