/**
 * The setup step of a handoff, between creating the worktree and forking the session: the carried
 * changes (`--carry`), then the settings' `copy` and `symlink` entries from the main checkout.
 *
 * Invariants:
 * - The parent checkout and the main checkout are only read; everything is written inside the new
 *   worktree, and nothing there is overwritten (an existing file is skipped and reported).
 * - `copy`/`symlink` take only what git does not track in the main checkout (ignored or untracked
 *   files such as `.env`): a tracked file is already in the worktree at the base commit, and a
 *   directory holding tracked files is skipped whole, so the checkout is never shadowed.
 * - Matching never enters `.git` or the new worktree itself (when worktrees live inside the repo).
 * - A failure throws one sentence that says what was already done; the caller records the step.
 */
import { glob } from "node:fs/promises";
import { relative, sep } from "node:path";
import type { CarriedChange, ChangesSnapshot, CheckoutGitPort } from "../git/types.ts";
import { copyInto, linkInto, type CopyReport } from "../fs/copy-into.ts";
import { errorClause } from "../errors.ts";
import { counted } from "../text.ts";

export interface SetupRequest {
  git: CheckoutGitPort;
  mainCheckout: string;
  worktreePath: string;
  carry?: ChangesSnapshot | undefined;
  copy?: readonly string[] | undefined;
  symlink?: readonly string[] | undefined;
}

export interface SetupResult {
  carried?: {
    mode: ChangesSnapshot["mode"];
    from: string;
    changes: CarriedChange[];
    /** Untracked files copied (`--carry=all`). */
    untracked: string[];
  };
  copied: string[];
  symlinked: string[];
  skipped: Array<{ path: string; reason: string }>;
}

/** Whether a request has anything to do (the step is skipped, and not recorded, otherwise). */
export function hasSetupWork(request: Pick<SetupRequest, "carry" | "copy" | "symlink">): boolean {
  return request.carry !== undefined || (request.copy?.length ?? 0) > 0 || (request.symlink?.length ?? 0) > 0;
}

export async function setUpWorktree(request: SetupRequest): Promise<SetupResult> {
  const result: SetupResult = { copied: [], symlinked: [], skipped: [] };
  if (request.carry !== undefined) await carryChanges(request, request.carry, result);
  const copyPatterns = request.copy ?? [];
  const linkPatterns = request.symlink ?? [];
  if (copyPatterns.length + linkPatterns.length === 0) return result;

  const select = await entrySelector(request, result);
  const place = [
    { patterns: copyPatterns, put: copyInto, verb: "copy", into: result.copied },
    { patterns: linkPatterns, put: linkInto, verb: "symlink", into: result.symlinked },
  ];
  for (const { patterns, put, verb, into } of place) {
    for (const entry of await select(patterns)) {
      const report: CopyReport = { created: [], skipped: [] };
      try {
        await put(request.mainCheckout, request.worktreePath, entry, report);
      } catch (error) {
        throw new Error(`Could not ${verb} ${entry} into the worktree (${errorClause(error)})${describeDone(result)}.`);
      }
      if (report.created.length > 0) into.push(entry);
      result.skipped.push(...report.skipped);
    }
  }
  result.skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return result;
}

/** `--carry`: the tracked changes as patches, then (with `all`) the untracked files. */
async function carryChanges(request: SetupRequest, snapshot: ChangesSnapshot, result: SetupResult): Promise<void> {
  await request.git.applyChanges(request.worktreePath, snapshot);
  const untracked: CopyReport = { created: [], skipped: [] };
  for (const file of snapshot.untracked) {
    try {
      await copyInto(snapshot.checkout, request.worktreePath, file, untracked);
    } catch (error) {
      throw new Error(
        `Could not copy the untracked file ${file} into the worktree (${errorClause(error)}); the tracked changes were carried${describeDone(result)}.`,
      );
    }
  }
  result.carried = {
    mode: snapshot.mode,
    from: snapshot.checkout,
    changes: snapshot.changes,
    untracked: untracked.created,
  };
  result.skipped.push(...untracked.skipped);
}

/**
 * The entries the settings' patterns select in the main checkout: never inside `.git` or the new
 * worktree, never a tracked file or a directory holding tracked files (those are noted as skipped),
 * and a matched directory covers what a pattern also matched inside it.
 */
async function entrySelector(
  request: SetupRequest,
  result: SetupResult,
): Promise<(patterns: readonly string[]) => Promise<string[]>> {
  const tracked = await request.git.trackedFiles(request.mainCheckout);
  const trackedFiles = new Set(tracked);
  const trackedDirs = new Set<string>();
  for (const file of tracked) {
    for (let slash = file.indexOf("/"); slash !== -1; slash = file.indexOf("/", slash + 1))
      trackedDirs.add(file.slice(0, slash));
  }
  const worktreeInside = relative(request.mainCheckout, request.worktreePath);
  const insideRepo = worktreeInside !== "" && !worktreeInside.startsWith("..") && !worktreeInside.startsWith(sep);
  const excluded = (path: string): boolean =>
    path.split(sep).includes(".git") ||
    (insideRepo && (path === worktreeInside || path.startsWith(`${worktreeInside}${sep}`)));

  return async (patterns) => {
    if (patterns.length === 0) return [];
    const matched: string[] = [];
    for await (const entry of glob([...patterns], { cwd: request.mainCheckout, exclude: excluded }))
      matched.push(entry);
    // Parents before children, so a matched directory covers what a pattern also matched inside it.
    const chosen: string[] = [];
    for (const entry of [...new Set(matched)].sort()) {
      const gitPath = entry.split(sep).join("/");
      if (chosen.some((parent) => gitPath.startsWith(`${parent}/`))) continue;
      if (trackedFiles.has(gitPath))
        result.skipped.push({ path: gitPath, reason: "tracked by git (it is in the worktree already)" });
      else if (trackedDirs.has(gitPath))
        result.skipped.push({ path: gitPath, reason: "a directory with tracked files" });
      else chosen.push(gitPath);
    }
    return chosen;
  };
}

function describeDone(result: SetupResult): string {
  const parts: string[] = [];
  if (result.copied.length > 0) parts.push(`copied ${result.copied.join(", ")}`);
  if (result.symlinked.length > 0) parts.push(`symlinked ${result.symlinked.join(", ")}`);
  return parts.length > 0 ? `; already ${parts.join("; ")}` : "";
}

/** Lines for the user and the handoff message: what the setup brought into the worktree. */
export function describeSetup(result: SetupResult, limit = 20): string[] {
  const lines: string[] = [];
  const list = (items: readonly string[]): string =>
    items.length <= limit ? items.join(", ") : `${items.slice(0, limit).join(", ")} and ${items.length - limit} more`;
  if (result.carried !== undefined) {
    const { changes, untracked, from } = result.carried;
    if (changes.length === 0 && untracked.length === 0) {
      lines.push(
        `Carried: nothing (${from} had no uncommitted changes${result.carried.mode === "all" ? " or untracked files" : " to tracked files"}).`,
      );
    } else {
      const described = changes.map((change) =>
        change.from !== undefined
          ? `${change.status} ${change.from} -> ${change.path}`
          : `${change.status} ${change.path}`,
      );
      if (changes.length > 0)
        lines.push(
          `Carried ${counted(changes.length, "uncommitted change")} from ${from} (staged ones stay staged): ${list(described)}.`,
        );
      if (untracked.length > 0)
        lines.push(`Carried ${counted(untracked.length, "untracked file")}: ${list(untracked)}.`);
    }
  }
  if (result.copied.length > 0) lines.push(`Copied from the main checkout: ${list(result.copied)}.`);
  if (result.symlinked.length > 0) lines.push(`Symlinked to the main checkout: ${list(result.symlinked)}.`);
  if (result.skipped.length > 0) {
    lines.push(`Left alone: ${list(result.skipped.map((skip) => `${skip.path} (${skip.reason})`))}.`);
  }
  return lines;
}
