/**
 * git's output, parsed: `git worktree list --porcelain`, `git status --porcelain=v1 -z`, and its
 * diagnostics as one line.
 *
 * Invariants:
 * - Pure: no git runs here; unknown keys of newer git output are ignored, so it still parses.
 */
import type { WorktreeEntry } from "./types.ts";

export const BRANCH_REF_PREFIX = "refs/heads/";

export interface ParsedWorktree extends WorktreeEntry {
  bare: boolean;
  locked: boolean;
}

export interface ParsedStatus {
  /** Tracked paths that are modified, staged, deleted, renamed or conflicted (renames: the new path). */
  dirtyFiles: string[];
  /** Untracked paths; a wholly untracked directory is one entry ending in `/`. */
  untrackedFiles: string[];
  /** Paths git ignores (only when asked for); an ignored directory is one entry ending in `/`. */
  ignoredFiles: string[];
}

/**
 * Parses `git worktree list --porcelain`, with or without `-z`: records of `key value` lines
 * separated by an empty line. Unknown keys are ignored so newer git output still parses.
 */
export function parseWorktreeList(output: string): ParsedWorktree[] {
  const lineSeparator = output.includes("\0") ? "\0" : "\n";
  const worktrees: ParsedWorktree[] = [];
  let current: ParsedWorktree | undefined;
  for (const line of output.split(lineSeparator)) {
    if (line.trim() === "") {
      current = undefined;
      continue;
    }
    const space = line.indexOf(" ");
    const key = space === -1 ? line : line.slice(0, space);
    const value = space === -1 ? "" : line.slice(space + 1);
    if (key === "worktree") {
      current = { path: value, detached: false, prunable: false, bare: false, locked: false };
      worktrees.push(current);
      continue;
    }
    if (current === undefined) continue;
    switch (key) {
      case "HEAD":
        current.head = value;
        break;
      case "branch":
        current.branch = value.startsWith(BRANCH_REF_PREFIX) ? value.slice(BRANCH_REF_PREFIX.length) : value;
        break;
      case "detached":
        current.detached = true;
        break;
      case "bare":
        current.bare = true;
        break;
      case "locked":
        current.locked = true;
        break;
      case "prunable":
        current.prunable = true;
        break;
    }
  }
  return worktrees;
}

/** Parses `git status --porcelain=v1 -z`: `XY path` entries, a rename or copy followed by its source path. */
export function parseStatus(output: string): ParsedStatus {
  const dirtyFiles: string[] = [];
  const untrackedFiles: string[] = [];
  const ignoredFiles: string[] = [];
  const entries = output.split("\0");
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index];
    if (entry === undefined || entry.length < 4) continue;
    const code = entry.slice(0, 2);
    const file = entry.slice(3);
    if (code === "??") untrackedFiles.push(file);
    else if (code === "!!") ignoredFiles.push(file);
    else {
      dirtyFiles.push(file);
      if (code.includes("R") || code.includes("C")) index += 1; // skip the source path
    }
  }
  return { dirtyFiles, untrackedFiles, ignoredFiles };
}

/** git's diagnostic as one line: its `fatal:`/`error:` lines without the prefix, else its first line. */
export function summarizeGitStderr(stderr: string): string | undefined {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  const diagnostics = lines.filter((line) => /^(?:fatal|error):/i.test(line));
  const chosen = diagnostics.length > 0 ? diagnostics : lines.slice(0, 1);
  if (chosen.length === 0) return undefined;
  return chosen.map((line) => line.replace(/^(?:fatal|error):\s*/i, "")).join("; ");
}
