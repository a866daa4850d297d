/**
 * The short lock around a read-modify-write (the manifest store's store-wide lock and per-manifest
 * lock): a lock directory made by proper-lockfile, the only module that imports it.
 *
 * Invariants:
 * - The lock's holder is judged by its heartbeat alone (the liveness rule's heartbeat form,
 *   liveness.ts): proper-lockfile touches the directory's mtime while it is held, and a directory
 *   untouched for `staleMs` is stale and taken over. It records no pid, so nothing here asks the
 *   process table, and a holder on another machine sharing the directory is judged the same way.
 * - Waited for at most `waitMs` (longer than `staleMs` by default, so a lock left by a killed
 *   process is taken over rather than reported); then the caller's `locked` error.
 * - A lock that is lost while held (taken over as stale) is never written under: `assertHeld`
 *   throws the caller's `lock_compromised` error, and proper-lockfile's own throw from a timer
 *   (which would crash the process) is turned into that.
 * - The caller names its errors (`fail`), so each store keeps its own error type.
 */
import { lock } from "proper-lockfile";
import { errorCode } from "../fs/probe.ts";
import { formatWait } from "../text.ts";
import { heartbeatLiveness } from "./liveness.ts";

/** proper-lockfile's floor for `stale`. */
export const MIN_STALE_MS = 2_000;
export const DEFAULT_STALE_MS = 10_000;
/** Longer than the stale window, so a lock left by a killed process is taken over rather than reported. */
export const DEFAULT_LOCK_WAIT_MS = 15_000;

export type FileLockFailure = "not_found" | "locked" | "lock_compromised";

export interface FileLockOptions {
  /** A lock whose directory has not been touched for this long is abandoned (at least `MIN_STALE_MS`). */
  staleMs: number;
  /** Longest time to wait for the lock. */
  waitMs: number;
  /** The lock of a file that may not exist yet (the action lock of a handoff being created). */
  targetMayBeMissing?: boolean;
  /** The caller's error for each failure. */
  fail: (code: FileLockFailure, message: string, cause: unknown) => Error;
}

/** Whether a lock directory last touched `ageMs` ago is abandoned: what proper-lockfile would take over. */
export function isStaleLockDirectory(mtimeMs: number, staleMs: number, nowMs: number): boolean {
  return (
    heartbeatLiveness({ at: new Date(mtimeMs).toISOString(), staleAfterMs: staleMs }, new Date(nowMs)).verdict ===
    "dead"
  );
}

/**
 * Runs `body` holding the lock directory `lockPath` for `target` (which must exist unless
 * `targetMayBeMissing`). `assertHeld` throws if the lock was lost, so nothing is written then.
 */
export async function withFileLock<T>(
  target: string,
  lockPath: string,
  what: string,
  body: (assertHeld: () => void) => Promise<T>,
  options: FileLockOptions,
): Promise<T> {
  let compromised: Error | undefined;
  let release: () => Promise<void>;
  try {
    release = await lock(target, {
      lockfilePath: lockPath,
      ...(options.targetMayBeMissing === true ? { realpath: false } : {}),
      stale: Math.max(options.staleMs, MIN_STALE_MS),
      retries: {
        retries: Math.ceil(options.waitMs / 10) + 1,
        factor: 1.3,
        minTimeout: 10,
        maxTimeout: 200,
        randomize: true,
        maxRetryTime: options.waitMs,
      },
      // The default throws from a timer, which would crash the process; record it and refuse to write.
      onCompromised: (error) => {
        compromised = error;
      },
    });
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT") throw options.fail("not_found", `No handoff manifest at ${target}.`, error);
    if (code === "ELOCKED") {
      throw options.fail(
        "locked",
        `Gave up after ${formatWait(options.waitMs)} waiting for the lock on ${what} (${lockPath}); another process holds it.`,
        error,
      );
    }
    throw error;
  }
  const assertHeld = (): void => {
    if (compromised)
      throw options.fail(
        "lock_compromised",
        `Lost the lock on ${what} (${lockPath}): ${compromised.message}`,
        compromised,
      );
  };
  try {
    return await body(assertHeld);
  } finally {
    try {
      await release();
    } catch (error) {
      // A compromised lock is already released; anything else is worth surfacing.
      if (!compromised) throw error;
    }
  }
}
