/**
 * `findForkedSession`: the child session a killed fork left in the recorded directory is told
 * apart from every other session there by its header alone: branched for this worktree, from this
 * parent (or from the fork's private copy of it, when the kill came before the header was
 * rewritten), no earlier than the handoff began.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FORK_SCRATCH_PREFIX } from "../../src/session/fork.ts";
import { findForkedSession } from "../../src/session/find-fork.ts";

let dir: string;
const worktreePath = "/repo.worktrees/feat-x";
const parentSessionFile = "/agent/sessions/--repo--/2026-01-01T00-00-00-000Z_parent.jsonl";
const since = "2026-06-01T10:00:00.000Z";

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "find-fork-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function session(name: string, header: Record<string, unknown>): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `${JSON.stringify({ type: "session", version: 3, id: name.replace(/\.jsonl$/, ""), ...header })}\n{"type":"message"}\n`,
  );
  return file;
}

const query = () => ({ dir, worktreePath, parentSessionFile, since });

describe("findForkedSession", () => {
  it("finds the child whose header names this worktree and this parent, since the handoff began", async () => {
    const file = session("b-child.jsonl", {
      cwd: worktreePath,
      parentSession: parentSessionFile,
      timestamp: "2026-06-01T10:00:01.000Z",
    });
    session("a-own.jsonl", { cwd: worktreePath, timestamp: "2026-06-01T10:00:02.000Z" });
    expect(await findForkedSession(query())).toEqual({ sessionFile: file, sessionId: "b-child" });
  });

  it("finds a child whose header still points at the fork's private copy of the parent (killed before the rewrite)", async () => {
    const copy = join(tmpdir(), `${FORK_SCRATCH_PREFIX}Ab12Cd`, "2026-01-01T00-00-00-000Z_parent.jsonl");
    const file = session("child.jsonl", {
      cwd: worktreePath,
      parentSession: copy,
      timestamp: "2026-06-01T10:00:01.000Z",
    });
    expect(await findForkedSession(query())).toEqual({ sessionFile: file, sessionId: "child" });
  });

  it("takes no session of another worktree, another parent, an earlier handoff, or without a header", async () => {
    session("1.jsonl", {
      cwd: "/repo.worktrees/other",
      parentSession: parentSessionFile,
      timestamp: "2026-06-01T10:00:01.000Z",
    });
    session("2.jsonl", {
      cwd: worktreePath,
      parentSession: "/agent/sessions/--repo--/other.jsonl",
      timestamp: "2026-06-01T10:00:01.000Z",
    });
    session("3.jsonl", {
      cwd: worktreePath,
      parentSession: join(tmpdir(), "elsewhere", "2026-01-01T00-00-00-000Z_parent.jsonl"),
      timestamp: "2026-06-01T10:00:01.000Z",
    });
    session("4.jsonl", { cwd: worktreePath, parentSession: parentSessionFile, timestamp: "2026-06-01T09:59:59.000Z" });
    session("5.jsonl", { cwd: worktreePath, parentSession: parentSessionFile });
    writeFileSync(join(dir, "6.jsonl"), "not json\n");
    writeFileSync(join(dir, "7.txt"), "");
    expect(await findForkedSession(query())).toBeUndefined();
    expect(await findForkedSession({ ...query(), dir: join(dir, "missing") })).toBeUndefined();
  });
});
