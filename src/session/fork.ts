/**
 * Fork the active branch of a parent session into a child session whose cwd is the worktree.
 *
 * Invariants:
 * - The parent session file is only read, never opened by a SessionManager (which rewrites files
 *   it migrates and appends a newline to a file that lacks one).
 * - Only the root-to-leaf path reaches the child, never abandoned branches, and exactly one
 *   handoff message is appended after it; the child's header points back at the real parent.
 * - A message addressed to the parent alone (a child's report, a landing's notice, a note) is not
 *   handed on: on both paths it reaches the child as a custom entry in its place, out of the
 *   child's context (addressed-messages.ts).
 * - A parent in the one format the lean writer was checked against (`LEAN_WRITER_SESSION_VERSION`),
 *   forked by a Pi that calls that format current, is written straight into the child as Pi's
 *   `createBranchedSession` + `appendCustomMessageEntry` would write it (active-path.ts, ADR 0014),
 *   streaming: the conversation is never held in memory. Anything else (an older file that needs
 *   Pi's migration, or a Pi whose current format is not the checked one) goes through Pi's
 *   SessionManager on a private copy, and the child header is rewritten.
 * - The child file is complete on disk when `forkActiveBranch` resolves; the private copy is gone.
 * - Pi's SessionManager is passed in (`SessionHost`), so the same code runs on the main thread and
 *   in a worker that loaded Pi's session module by path.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { SessionManager } from "@earendil-works/pi-coding-agent";
import { LEAN_WRITER_SESSION_VERSION, writeBranchedSession } from "./active-path.ts";
import { copyWithoutAddressedMessages } from "./addressed-messages.ts";
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

type SessionOpener = Pick<typeof SessionManager, "open">;

/** The parts of Pi's session module the fork uses. */
export interface SessionHost {
  /** Pi's SessionManager, or how to load it: only an older file needs it (Pi's migration). */
  SessionManager: SessionOpener | (() => Promise<SessionOpener>);
  CURRENT_SESSION_VERSION: number;
}

export type ForkPhase = "copying the active path" | "branching" | "writing the handoff message";

export class ForkError extends Error {
  override readonly name = "ForkError";
}

const NO_CONVERSATION = "The active branch has no messages yet, so there is nothing to hand off.";

export async function forkActiveBranch(
  request: ForkRequest,
  host: SessionHost,
  onPhase: (phase: ForkPhase) => void = () => {},
): Promise<ForkResult> {
  const header = readSessionHeader(request.parentSessionFile);
  if (!header.ok) throw new ForkError(header.message);
  const missingLeaf = () => new ForkError(`The active entry ${request.leafId} is not in ${request.parentSessionFile}.`);
  if (leanWriterFits(header.header.version, host)) {
    onPhase("copying the active path");
    const written = await writeBranchedSession({ ...request, sessionVersion: LEAN_WRITER_SESSION_VERSION }, () =>
      onPhase("branching"),
    );
    if (written.code === "leaf_missing") throw missingLeaf();
    if (written.code === "no_conversation") throw new ForkError(NO_CONVERSATION);
    onPhase("writing the handoff message");
    const { childSessionFile, childSessionId, pathEntries, parentEntries } = written;
    return { childSessionFile, childSessionId, pathEntries, parentEntries };
  }
  return forkMigrated(request, host, onPhase, missingLeaf);
}

/** Whether the lean writer may fork this file for this Pi: both in the format it was checked against. */
export function leanWriterFits(
  fileVersion: number | undefined,
  host: Pick<SessionHost, "CURRENT_SESSION_VERSION">,
): boolean {
  return fileVersion === LEAN_WRITER_SESSION_VERSION && host.CURRENT_SESSION_VERSION === LEAN_WRITER_SESSION_VERSION;
}

/**
 * Pi's SessionManager branches a full private copy: an older file gets ids only when Pi migrates
 * it (so its path cannot be read before that), and a format the lean writer was not checked
 * against is branched by the rules of the Pi that defines it.
 */
async function forkMigrated(
  request: ForkRequest,
  host: SessionHost,
  onPhase: (phase: ForkPhase) => void,
  missingLeaf: () => ForkError,
): Promise<ForkResult> {
  const scratchDir = await mkdtemp(join(tmpdir(), FORK_SCRATCH_PREFIX));
  try {
    const copy = join(scratchDir, basename(request.parentSessionFile));
    onPhase("copying the active path");
    // Messages addressed to the parent alone are not handed on (addressed-messages.ts), as the lean writer does.
    await copyWithoutAddressedMessages(request.parentSessionFile, copy);

    onPhase("branching");
    // `open` with a cwd override: the branched header takes the worktree as its cwd.
    const opener = "open" in host.SessionManager ? host.SessionManager : await host.SessionManager();
    const manager = opener.open(copy, request.childSessionDir, request.childCwd);
    if (!manager.getEntry(request.leafId)) throw missingLeaf();
    const pathEntries = manager.getBranch(request.leafId).length;
    const parentEntries = manager.getEntryCount();
    const childSessionFile = manager.createBranchedSession(request.leafId);
    if (childSessionFile === undefined) throw new ForkError("Pi did not create a child session file.");

    onPhase("writing the handoff message");
    manager.appendCustomMessageEntry(
      request.message.customType,
      request.message.content,
      true,
      request.message.details,
    );
    if (!existsSync(childSessionFile)) throw new ForkError(NO_CONVERSATION);
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
