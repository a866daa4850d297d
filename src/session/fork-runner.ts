/**
 * Where the fork runs: in a worker thread when Pi's session module can be loaded by path (the
 * parent's event loop, and so its TUI, stays responsive), otherwise on the calling thread.
 *
 * Invariants:
 * - The result and the errors are the same either way (a worker's error comes back as a
 *   `ForkError` with the same message); a worker that cannot load or dies falls back to this thread.
 * - A worker forks at most once and is always terminated (after its fork, on timeout, on dispose).
 * - Nothing the worker prints reaches the terminal (it would draw over Pi's TUI).
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { getCompileCacheDir } from "node:module";
import { Worker } from "node:worker_threads";
import { strippedCacheDir } from "../../bin/native-loader.mjs";
import {
  forkActiveBranch,
  ForkError,
  type ForkPhase,
  type ForkRequest,
  type ForkResult,
  type SessionHost,
} from "./fork.ts";
import { formatWait } from "../text.ts";

const WORKER_FILE = fileURLToPath(new URL("./fork-worker.mjs", import.meta.url));
const FORK_MODULE = new URL("./fork.ts", import.meta.url).href;
/** The package's own files, which the worker may load as TypeScript. */
const PACKAGE_ROOT = new URL("../../", import.meta.url).href;
const DEFAULT_TIMEOUT_MS = 120_000;

/** Pi's session module inside its package (`getPackageDir()`), when this Pi ships one on disk. */
export function locatePiSessionModule(piPackageDir: string | undefined): string | undefined {
  if (piPackageDir === undefined) return undefined;
  const candidate = join(piPackageDir, "dist", "core", "session-manager.js");
  return existsSync(candidate) ? candidate : undefined;
}

interface WorkerMessage {
  type: string;
  phase?: ForkPhase;
  result?: ForkResult;
  message?: string;
}

/** The worker could not run the fork (it failed to load or died): the fork can still run in-thread. */
export class ForkWorkerUnavailable extends Error {
  override readonly name = "ForkWorkerUnavailable";
}

/** Where a worker keeps what it compiles and strips (the parent's own caches unless a test names others). */
export interface ForkWorkerCaches {
  /** The base directory Node's compile cache is enabled with (Node adds its version tag below it). */
  compileCacheBase?: string | undefined;
  /** This package's stripped TypeScript (bin/native-loader.mjs). */
  strippedCacheDir?: string | undefined;
}

/** The caches of this thread: Pi's compile cache (its base, without Node's version tag) and the stripped files beside it. */
function parentCaches(): ForkWorkerCaches {
  const compileCache = getCompileCacheDir?.();
  return {
    compileCacheBase: compileCache === undefined ? undefined : dirname(compileCache),
    strippedCacheDir: strippedCacheDir(),
  };
}

/** A worker started ahead of time (it loads its modules while the caller does other work). */
export class ForkWorker {
  private readonly worker: Worker;
  private used = false;
  /** Why the worker ended before it was asked to fork (it failed to load, or exited). */
  private ended: string | undefined;

  private readonly sessionVersion: number;

  private constructor(sessionModulePath: string, sessionVersion: number, caches: ForkWorkerCaches) {
    this.sessionVersion = sessionVersion;
    this.worker = new Worker(WORKER_FILE, {
      workerData: {
        sessionModulePath,
        forkModulePath: FORK_MODULE,
        packageRootUrl: PACKAGE_ROOT,
        compileCacheBase: caches.compileCacheBase,
        strippedCacheDir: caches.strippedCacheDir,
      },
      stdout: true,
      stderr: true,
    });
    // Drain and drop: Node's experimental-feature warnings must not draw over the TUI.
    this.worker.stdout.resume();
    this.worker.stderr.resume();
    // Listened to from the start: a worker that fails before its fork is asked for must not be an
    // unhandled error in Pi; the fork then runs on the caller's thread.
    this.worker.on("error", (error) => {
      this.ended ??= error.message;
    });
    this.worker.on("exit", (code) => {
      this.ended ??= `exit code ${code}`;
    });
    // An idle worker must not keep Pi (or a test) alive.
    this.worker.unref();
  }

  /** `sessionVersion`: Pi's CURRENT_SESSION_VERSION as this thread loaded it. */
  static start(
    sessionModulePath: string,
    sessionVersion: number,
    caches: ForkWorkerCaches = parentCaches(),
  ): ForkWorker {
    return new ForkWorker(sessionModulePath, sessionVersion, caches);
  }

  fork(
    request: ForkRequest,
    options: { onPhase?: (phase: ForkPhase) => void; timeoutMs?: number } = {},
  ): Promise<ForkResult> {
    // A second fork (a handoff whose early fork could not be used) runs on the caller's thread.
    if (this.used) return Promise.reject(new ForkWorkerUnavailable("This fork worker was already used."));
    this.used = true;
    if (this.ended !== undefined) {
      this.dispose();
      return Promise.reject(new ForkWorkerUnavailable(this.ended));
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise<ForkResult>((resolve, reject) => {
      let settled = false;
      const settle = (action: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.dispose();
        action();
      };
      const timer = setTimeout(() => {
        settle(() =>
          reject(new ForkError(`Copying the conversation took longer than ${formatWait(timeoutMs)} and was stopped.`)),
        );
      }, timeoutMs);
      this.worker.ref();
      this.worker.on("message", (message: WorkerMessage) => {
        if (message.type === "phase" && message.phase !== undefined) options.onPhase?.(message.phase);
        else if (message.type === "done" && message.result !== undefined)
          settle(() => resolve(message.result as ForkResult));
        else if (message.type === "error") settle(() => reject(new ForkError(message.message ?? "The fork failed.")));
        else if (message.type === "unavailable") settle(() => reject(new ForkWorkerUnavailable(message.message ?? "")));
      });
      this.worker.on("error", (error) => settle(() => reject(new ForkWorkerUnavailable(error.message))));
      this.worker.on("exit", (code) => settle(() => reject(new ForkWorkerUnavailable(`exit code ${code}`))));
      // The worker needs Pi's session module only for an older file: it is told the current version.
      this.worker.postMessage({ type: "fork", request, sessionVersion: this.sessionVersion });
    });
  }

  dispose(): void {
    void this.worker.terminate();
  }
}

export interface ForkRunnerOptions {
  /** A worker started earlier; it is used once and then terminated. */
  worker?: ForkWorker | undefined;
  /** Pi's session module by path, to start a worker now when none was given. */
  sessionModulePath?: string | undefined;
  /** Pi's session module as loaded on this thread, for the fallback. */
  host: SessionHost;
  onPhase?: (phase: ForkPhase) => void;
  timeoutMs?: number;
}

export async function runFork(request: ForkRequest, options: ForkRunnerOptions): Promise<ForkResult> {
  const worker =
    options.worker ??
    (options.sessionModulePath !== undefined
      ? ForkWorker.start(options.sessionModulePath, options.host.CURRENT_SESSION_VERSION)
      : undefined);
  if (worker !== undefined) {
    try {
      return await worker.fork(request, {
        ...(options.onPhase !== undefined ? { onPhase: options.onPhase } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      });
    } catch (error) {
      // A handoff that can fork on this thread should not fail because a worker could not start.
      if (!(error instanceof ForkWorkerUnavailable)) throw error;
    }
  }
  return forkActiveBranch(request, options.host, options.onPhase);
}
