/**
 * Where the fork runs: in a worker thread when Pi's session module can be loaded by path (the
 * parent's event loop, and so its TUI, stays responsive), otherwise on the calling thread.
 *
 * Invariants: the result and the errors are the same either way (a worker's error comes back as a
 * `ForkError` with the same message); the worker is always terminated.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { forkActiveBranch, ForkError, type ForkPhase, type ForkRequest, type ForkResult, type SessionHost } from "./fork.ts";

const WORKER_FILE = fileURLToPath(new URL("./fork-worker.mjs", import.meta.url));
const FORK_MODULE = fileURLToPath(new URL("./fork.ts", import.meta.url));

/** Pi's session module inside its package (`getPackageDir()`), when this Pi ships one on disk. */
export function locatePiSessionModule(piPackageDir: string | undefined): string | undefined {
  if (piPackageDir === undefined) return undefined;
  const candidate = join(piPackageDir, "dist", "core", "session-manager.js");
  return existsSync(candidate) ? candidate : undefined;
}

export interface ForkRunnerOptions {
  /** Pi's session module by path; without it the fork runs on this thread with `host`. */
  sessionModulePath?: string | undefined;
  host: SessionHost;
  onPhase?: (phase: ForkPhase) => void;
  /** How long the worker may take before it is stopped. */
  timeoutMs?: number;
}

export async function runFork(request: ForkRequest, options: ForkRunnerOptions): Promise<ForkResult> {
  if (options.sessionModulePath === undefined) return forkActiveBranch(request, options.host, options.onPhase);
  return new Promise<ForkResult>((resolve, reject) => {
    const worker = new Worker(WORKER_FILE, {
      workerData: { request, sessionModulePath: options.sessionModulePath, forkModulePath: FORK_MODULE },
    });
    const timer = setTimeout(() => {
      settle(() => reject(new ForkError(`Copying the conversation took longer than ${Math.round((options.timeoutMs ?? 0) / 1000)} s and was stopped.`)));
    }, options.timeoutMs ?? 120_000);
    let settled = false;
    const settle = (action: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      action();
    };
    worker.on("message", (message: { type: string; phase?: ForkPhase; result?: ForkResult; message?: string }) => {
      if (message.type === "phase" && message.phase !== undefined) options.onPhase?.(message.phase);
      else if (message.type === "done" && message.result !== undefined) settle(() => resolve(message.result as ForkResult));
      else if (message.type === "error") settle(() => reject(new ForkError(message.message ?? "The fork failed.")));
    });
    worker.on("error", (error) => settle(() => reject(new ForkError(`The fork worker failed: ${error.message}`))));
    worker.on("exit", (code) => settle(() => reject(new ForkError(`The fork worker stopped (exit code ${code}) before it finished.`))));
  });
}
