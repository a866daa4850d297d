// Runs the fork in a worker thread, so the parent Pi's event loop (its TUI) never blocks on it.
// Plain JavaScript: a worker starts with a bare Node loader, so the TypeScript fork is loaded
// through jiti, and Pi's own session module is imported by the path the main thread found.
import { parentPort, workerData } from "node:worker_threads";
import { createJiti } from "jiti";

const { request, sessionModulePath, forkModulePath } = workerData;

try {
  const host = await import(sessionModulePath);
  const jiti = createJiti(import.meta.url, { moduleCache: false });
  const { forkActiveBranch } = await jiti.import(forkModulePath);
  const result = await forkActiveBranch(request, host, (phase) => parentPort.postMessage({ type: "phase", phase }));
  parentPort.postMessage({ type: "done", result });
} catch (error) {
  parentPort.postMessage({
    type: "error",
    name: error instanceof Error ? error.name : "Error",
    message: error instanceof Error ? error.message : String(error),
  });
}
