/**
 * The leftovers of the manifest store: every entry of its directory that is neither a manifest nor
 * a file of an existing handoff, what it is, and whether it is abandoned (safe to delete); and the
 * sweep that deletes the abandoned ones. `ManifestStore.leftovers` and `sweepLeftovers` delegate here.
 *
 * Invariants:
 * - A temp file is deleted only when its writer (the pid in its name) is dead by the liveness rule
 *   (locks/liveness.ts), or it is older than `TEMP_MAX_AGE_MS` (a pid reused by a live process must
 *   not keep it for ever: a writer holds its temp file for milliseconds); an action lock only when
 *   its holder is dead by the same rule (judged again under the manifest's lock when it is swept); a
 *   lock directory only once proper-lockfile would take it over (stale, locks/file-lock.ts).
 * - Anything else is `unknown` and left alone. Listing is read-only.
 */
import { lstat, rmdir, unlink } from "node:fs/promises";
import type { Stats } from "node:fs";
import { join } from "node:path";
import { errorCode } from "../fs/probe.ts";
import { unlinkIfPresent } from "../fs/unlink.ts";
import { actionHolderLiveness, readActionLock, type ActionLockFile } from "../locks/action-lock.ts";
import { stillHeld } from "../locks/liveness.ts";
import { isStaleLockDirectory } from "../locks/file-lock.ts";
import type { ActionHolder } from "./action-holder.ts";

/** A temp file this old is abandoned whatever its pid says: writers keep theirs for milliseconds. */
export const TEMP_MAX_AGE_MS = 10 * 60_000;
/** `.<name>.<pid>.<8 hex>.tmp`, as `tempPathBeside` names them. */
const TEMP_PATTERN = /^\.(.+)\.(\d+)\.[0-9a-f]{8}\.tmp$/;
/** A handoff's own note written by a shell (`<id>.<what>.<pid>.tmp`, then renamed): the launcher's. */
const HANDOFF_TEMP_PATTERN = /^([^.]+\.[^/]+)\.(\d+)\.tmp$/;
export const ACTION_LOCK_SUFFIX = ".action";
const MANIFEST_SUFFIX = ".json";

/** An entry of the store directory that is not a manifest (nor a file a handoff owns), and what it is. */
export type StoreLeftover =
  | { kind: "temp"; name: string; path: string; pid: number; abandoned: boolean; reason: string }
  | {
      kind: "action_lock";
      name: string;
      path: string;
      holder: ActionHolder | undefined;
      abandoned: boolean;
      reason: string;
    }
  | { kind: "lock"; name: string; path: string; abandoned: boolean; reason: string }
  | { kind: "unknown"; name: string; path: string; abandoned: false; reason: string };

/** What the store lends the sweep. */
export interface LeftoverStore {
  dir: string;
  staleMs: number;
  /** The store directory's entries; none when it does not exist yet. */
  entries(): Promise<string[]>;
  /** Whether the writer `pid` of a temp file still lives (the liveness rule, pid alone). */
  writerAlive(pid: number): Promise<boolean>;
  /** The action lock at `path`, to read and judge its holder. */
  actionLock(path: string): ActionLockFile<ActionHolder>;
  /** Removes handoff `id`'s action lock under its manifest's lock if its holder is dead; whether it went. */
  removeDeadActionLock(id: string, path: string): Promise<boolean>;
  /** Whether `id` is a well-formed handoff id. */
  isId(id: string): boolean;
}

/** Every leftover of the store directory (see the header). Read-only. */
export async function listLeftovers(store: LeftoverStore): Promise<StoreLeftover[]> {
  const names = await store.entries();
  // Manifests, and the files a handoff keeps beside its manifest (`<id>.<what>`: the launcher and
  // its notes, the postCreate runner and status). Ids hold no dot, so the owner is the first word.
  const ids = new Set(
    names
      .filter((name) => name.endsWith(MANIFEST_SUFFIX) && !name.startsWith("."))
      .map((name) => name.slice(0, -MANIFEST_SUFFIX.length)),
  );
  const ownedByHandoff = (name: string): boolean => ids.has(name.slice(0, name.indexOf(".")));
  // File ages are against the real clock (the mtimes are), whatever clock stamps the manifests.
  const now = Date.now();
  const found: StoreLeftover[] = [];
  for (const name of names.sort()) {
    const temp = TEMP_PATTERN.exec(name) ?? HANDOFF_TEMP_PATTERN.exec(name);
    if (temp === null && !name.endsWith(".lock") && ownedByHandoff(name)) continue;
    const path = join(store.dir, name);
    let info;
    try {
      info = await lstat(path);
    } catch {
      continue; // Gone since the listing.
    }
    found.push(await describeLeftover(store, { name, path, info, temp, now }));
  }
  return found;
}

/** What one leftover entry is (`temp`: its match of a temp-file pattern), and whether it is abandoned. */
async function describeLeftover(
  store: LeftoverStore,
  entry: { name: string; path: string; info: Stats; temp: RegExpExecArray | null; now: number },
): Promise<StoreLeftover> {
  const { name, path, info, temp, now } = entry;
  if (temp !== null && info.isFile()) {
    const pid = Number(temp[2]);
    const alive = await store.writerAlive(pid);
    const old = now - info.mtimeMs > TEMP_MAX_AGE_MS;
    return {
      kind: "temp",
      name,
      path,
      pid,
      abandoned: !alive || old,
      reason: !alive
        ? `a temp file whose writer (pid ${pid}) is gone`
        : old
          ? `a temp file older than ${Math.round(TEMP_MAX_AGE_MS / 60_000)} minutes (pid ${pid} lives, but a writer keeps its temp file for milliseconds: the pid was reused)`
          : `a temp file being written by pid ${pid}`,
    };
  }
  if (name.startsWith(".") && name.endsWith(ACTION_LOCK_SUFFIX) && info.isFile()) {
    const lock = store.actionLock(path);
    const holder = await readActionLock(lock);
    const alive = holder !== undefined && stillHeld(await actionHolderLiveness(lock, holder));
    return {
      kind: "action_lock",
      name,
      path,
      holder,
      abandoned: !alive,
      reason:
        holder === undefined
          ? "an unreadable action lock (its writer died while writing it)"
          : `the action lock of handoff ${holder.id}: ${holder.action} by pid ${holder.pid} since ${holder.since}${alive ? "" : ", which is gone"}`,
    };
  }
  if (name.endsWith(".lock") && info.isDirectory()) {
    const stale = isStaleLockDirectory(info.mtimeMs, store.staleMs, now);
    return {
      kind: "lock",
      name,
      path,
      abandoned: stale,
      reason: stale
        ? "a lock left by a process that died holding it (stale: the next writer takes it over)"
        : "a lock held right now",
    };
  }
  return { kind: "unknown", name, path, abandoned: false, reason: "not a file this store writes; left alone" };
}

/**
 * Deletes the abandoned leftovers (judged afresh, action locks again under the manifest's lock)
 * and returns what went; `only` limits it to some (e.g. one handoff's temp files).
 */
export async function sweepLeftovers(
  store: LeftoverStore,
  only: (leftover: StoreLeftover) => boolean,
): Promise<StoreLeftover[]> {
  const swept: StoreLeftover[] = [];
  for (const leftover of await listLeftovers(store)) {
    if (!leftover.abandoned || !only(leftover)) continue;
    try {
      if (leftover.kind === "lock") await rmdir(leftover.path);
      else if (leftover.kind === "action_lock") {
        // Under the manifest's lock, like a takeover: a new holder may have just taken it.
        const id = leftover.holder?.id;
        const removed =
          id !== undefined && store.isId(id)
            ? await store.removeDeadActionLock(id, leftover.path)
            : await unlinkIfPresent(leftover.path);
        if (!removed) continue;
      } else await unlink(leftover.path);
      swept.push(leftover);
    } catch (error) {
      // Gone meanwhile (another sweeper), or a lock someone took again: not ours to report.
      if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTEMPTY") continue;
      throw error;
    }
  }
  return swept;
}
