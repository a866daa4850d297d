/**
 * Fork the active branch of a parent session into a child session whose cwd is the worktree.
 *
 * Invariants:
 * - The parent session file is only read, never opened by a SessionManager (which rewrites files
 *   it migrates and appends a newline to a file that lacks one). The fork works on a private copy
 *   of the active path, and the child's header is pointed back at the real parent.
 * - Only the root-to-leaf path reaches the child (`createBranchedSession`), never abandoned branches.
 * - Exactly one handoff message is appended, after the copied path.
 * - The child file is complete on disk when `forkActiveBranch` resolves; the private copy is gone.
 * - Pi's SessionManager is passed in (`SessionHost`), so the same code runs on the main thread and
 *   in a worker that loaded Pi's session module by path.
 */
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { SessionManager } from "@earendil-works/pi-coding-agent";
import { copyActivePath } from "./active-path.ts";
import type { HandoffMessage } from "./handoff-message.ts";
import { readSessionHeader } from "./header.ts";
import { replaceFirstLine } from "./rewrite-header.ts";

/** The private copy's directory (under the OS temp dir) starts so; a child header points there until the fork rewrites it. */
export const FORK_SCRATCH_PREFIX = "pi-handoff-fork-";

export interface ForkRequest {
  parentSessionFile: string;
  /** The parent's active leaf (from the live session manager: the leaf is not on disk). */
  leafId: string;
  /** The worktree: the child's cwd. */
  childCwd: string;
  childSessionDir: string;
  message: HandoffMessage;
}

export interface ForkResult {
  childSessionFile: string;
  childSessionId: string;
  /** Entries on the copied path, and in the parent, for the record. */
  pathEntries: number;
  parentEntries: number;
}

/** The parts of Pi's session module the fork uses. */
export interface SessionHost {
  SessionManager: Pick<typeof SessionManager, "open">;
  CURRENT_SESSION_VERSION: number;
}

export type ForkPhase = "copying the active path" | "branching" | "writing the handoff message";

export class ForkError extends Error {
  override readonly name = "ForkError";
}

export async function forkActiveBranch(
  request: ForkRequest,
  host: SessionHost,
  onPhase: (phase: ForkPhase) => void = () => {},
): Promise<ForkResult> {
  const header = readSessionHeader(request.parentSessionFile);
  if (!header.ok) throw new ForkError(header.message);
  const scratchDir = await mkdtemp(join(tmpdir(), FORK_SCRATCH_PREFIX));
  try {
    const copy = join(scratchDir, basename(request.parentSessionFile));
    onPhase("copying the active path");
    let pathEntries: number;
    let parentEntries: number;
    if (header.header.version === host.CURRENT_SESSION_VERSION) {
      const copied = await copyActivePath(request.parentSessionFile, request.leafId, copy);
      if (copied === undefined) {
        throw new ForkError(`The active entry ${request.leafId} is not in ${request.parentSessionFile}.`);
      }
      pathEntries = copied.pathEntries;
      parentEntries = copied.sourceEntries;
    } else {
      // Older files get ids only when Pi migrates them, so the path cannot be read before that:
      // migrate a full private copy instead.
      await copyFile(request.parentSessionFile, copy);
      pathEntries = -1;
      parentEntries = -1;
    }

    onPhase("branching");
    // `open` with a cwd override: the branched header takes the worktree as its cwd.
    const manager = host.SessionManager.open(copy, request.childSessionDir, request.childCwd);
    if (!manager.getEntry(request.leafId)) {
      throw new ForkError(`The active entry ${request.leafId} is not in ${request.parentSessionFile}.`);
    }
    if (pathEntries === -1) {
      pathEntries = manager.getBranch(request.leafId).length;
      parentEntries = manager.getEntryCount();
    }
    const childSessionFile = manager.createBranchedSession(request.leafId);
    if (childSessionFile === undefined) throw new ForkError("Pi did not create a child session file.");

    onPhase("writing the handoff message");
    manager.appendCustomMessageEntry(
      request.message.customType,
      request.message.content,
      true,
      request.message.details,
    );
    if (!existsSync(childSessionFile)) {
      throw new ForkError("The active branch has no messages yet, so there is nothing to hand off.");
    }
    await replaceFirstLine(childSessionFile, (line) => {
      const childHeader = JSON.parse(line) as Record<string, unknown>;
      childHeader.parentSession = request.parentSessionFile;
      return JSON.stringify(childHeader);
    });
    return { childSessionFile, childSessionId: manager.getSessionId(), pathEntries, parentEntries };
  } finally {
    await rm(scratchDir, { recursive: true, force: true });
  }
}
