// Runs the fork in a worker thread, so the parent Pi's event loop (its TUI) never blocks on it.
// Plain JavaScript: a worker starts with a bare Node loader. The TypeScript fork is loaded with
// Node's own type stripping (also for files under node_modules, which Node refuses by default),
// and Pi's own session module is imported by the path the main thread found. The modules load
// as soon as the worker starts, so a worker started early is warm when the fork is asked for.
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

const loaded = Promise.all([import(sessionModulePath), import(forkModulePath)]);
// A load failure is reported when the fork is asked for, not as an unhandled rejection.
loaded.catch(() => {});

parentPort.on("message", async (message) => {
  if (message?.type !== "fork") return;
  let modules;
  try {
    modules = await loaded;
  } catch (error) {
    // The caller falls back to forking on its own thread.
    parentPort.postMessage({ type: "unavailable", message: error instanceof Error ? error.message : String(error) });
    return;
  }
  try {
    const [host, { forkActiveBranch }] = modules;
    const result = await forkActiveBranch(message.request, host, (phase) =>
      parentPort.postMessage({ type: "phase", phase }),
    );
    parentPort.postMessage({ type: "done", result });
  } catch (error) {
    parentPort.postMessage({
      type: "error",
      name: error instanceof Error ? error.name : "Error",
      message: error instanceof Error ? error.message : String(error),
    });
  }
});
