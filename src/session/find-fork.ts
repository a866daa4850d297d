/**
 * Finding a child session the fork wrote but the manifest does not name: the handoff was killed
 * after Pi created the file (its name is Pi's choice) and before `forked` was recorded. The
 * manifest's intent names the directory; the file is told apart by its header.
 *
 * Invariants:
 * - Read-only: only header lines are read (header.ts), never a whole session.
 * - A file counts only when its header says it was branched for this worktree (`cwd`) from this
 *   handoff's parent (`parentSession`: the parent itself, or the fork's private copy of it when the
 *   kill came before the header was rewritten) no earlier than the handoff began (`timestamp`), so
 *   an older handoff's child in the same directory (a worktree path used again) is not taken.
 */
import { readdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { FORK_SCRATCH_PREFIX } from "./fork.ts";
import { readSessionHeader } from "./header.ts";

export interface ForkedSessionQuery {
  /** The directory the intent recorded. */
  dir: string;
  worktreePath: string;
  parentSessionFile: string;
  /** When the handoff began (its manifest's `createdAt`). */
  since: string;
}

export async function findForkedSession(
  query: ForkedSessionQuery,
): Promise<{ sessionFile: string; sessionId: string } | undefined> {
  let names: string[];
  try {
    names = await readdir(query.dir);
  } catch {
    return undefined;
  }
  const since = Date.parse(query.since);
  for (const name of names.filter((entry) => entry.endsWith(".jsonl")).sort()) {
    const sessionFile = join(query.dir, name);
    const read = readSessionHeader(sessionFile);
    if (!read.ok) continue;
    const { header } = read;
    const stamp = header.timestamp === undefined ? Number.NaN : Date.parse(header.timestamp);
    if (
      header.cwd !== query.worktreePath ||
      !(stamp >= since) ||
      !isThisParent(header.parentSession, query.parentSessionFile)
    )
      continue;
    return { sessionFile, sessionId: header.id };
  }
  return undefined;
}

function isThisParent(recorded: string | undefined, parentSessionFile: string): boolean {
  if (recorded === undefined) return false;
  if (recorded === parentSessionFile) return true;
  return (
    basename(recorded) === basename(parentSessionFile) && basename(dirname(recorded)).startsWith(FORK_SCRATCH_PREFIX)
  );
}
