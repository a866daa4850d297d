/**
 * Fork the active branch of a parent session into a child session whose cwd is the worktree.
 *
 * Invariants:
 * - The parent session file is never written. Pi's `SessionManager.open` rewrites a file it
 *   migrates (older versions) and appends a newline to a file that lacks one, so such a parent is
 *   forked from a private copy, and the child's header is pointed back at the real parent.
 * - Only the root-to-leaf path is copied (`createBranchedSession`), never abandoned branches.
 * - Exactly one handoff message is appended, after the copied path.
 * - The child file is complete on disk when `forkActiveBranch` returns.
 */
import { copyFileSync, existsSync, mkdtempSync, openSync, closeSync, readSync, fstatSync, rmSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { writeFileAtomicSync } from "../fs/atomic-write.ts";
import type { HandoffMessage } from "./handoff-message.ts";
import { readSessionHeader } from "./header.ts";

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
  /** Whether the parent had to be read through a private copy (see the module header). */
  forkedFromCopy: boolean;
}

export class ForkError extends Error {
  override readonly name = "ForkError";
}

/** Whether `SessionManager.open` could write to this file (migration or a missing final newline). */
export function openWouldWrite(sessionFile: string): boolean {
  const header = readSessionHeader(sessionFile);
  if (!header.ok) return true;
  if (header.header.version !== CURRENT_SESSION_VERSION) return true;
  const fd = openSync(sessionFile, "r");
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return true;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } finally {
    closeSync(fd);
  }
}

export function forkActiveBranch(request: ForkRequest): ForkResult {
  if (!existsSync(request.parentSessionFile)) {
    throw new ForkError(`The parent session file ${request.parentSessionFile} does not exist.`);
  }
  const forkedFromCopy = openWouldWrite(request.parentSessionFile);
  let scratchDir: string | undefined;
  let source = request.parentSessionFile;
  if (forkedFromCopy) {
    scratchDir = mkdtempSync(join(tmpdir(), "pi-handoff-fork-"));
    source = join(scratchDir, basename(request.parentSessionFile));
    copyFileSync(request.parentSessionFile, source);
  }
  try {
    // `open` with a cwd override: the branched header takes the worktree as its cwd, and
    // `parentSession` the source file. This manager is private; the live one is never touched.
    const manager = SessionManager.open(source, request.childSessionDir, request.childCwd);
    if (!manager.getEntry(request.leafId)) {
      throw new ForkError(`The active entry ${request.leafId} is not in ${request.parentSessionFile}.`);
    }
    const childSessionFile = manager.createBranchedSession(request.leafId);
    if (childSessionFile === undefined) throw new ForkError("Pi did not create a child session file.");
    manager.appendCustomMessageEntry(request.message.customType, request.message.content, true, request.message.details);
    if (!existsSync(childSessionFile)) {
      throw new ForkError("The active branch has no messages yet, so there is nothing to hand off.");
    }
    if (forkedFromCopy) pointHeaderAtParent(childSessionFile, request.parentSessionFile);
    return { childSessionFile, childSessionId: manager.getSessionId(), forkedFromCopy };
  } finally {
    if (scratchDir !== undefined) rmSync(scratchDir, { recursive: true, force: true });
  }
}

/** Rewrite the child's own header so `parentSession` names the real parent, not the private copy. */
function pointHeaderAtParent(childSessionFile: string, parentSessionFile: string): void {
  const text = readFileSync(childSessionFile, "utf8");
  const firstNewline = text.indexOf("\n");
  const headerLine = firstNewline === -1 ? text : text.slice(0, firstNewline);
  const header = JSON.parse(headerLine) as Record<string, unknown>;
  header.parentSession = parentSessionFile;
  writeFileAtomicSync(childSessionFile, JSON.stringify(header) + (firstNewline === -1 ? "\n" : text.slice(firstNewline)));
}
