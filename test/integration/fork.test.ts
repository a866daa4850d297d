/**
 * The fork with Pi's real SessionManager on real session files: only the active branch is copied,
 * one handoff message is appended, and the parent file keeps every byte, including the cases
 * where SessionManager.open would write to it (no final newline, an older version).
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildSessionContext, parseSessionEntries, SessionManager, type SessionEntry } from "@earendil-works/pi-coding-agent";
import { forkActiveBranch, ForkError, openWouldWrite } from "../../src/session/fork.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

function assistant(text: string) {
  return {
    role: "assistant" as const,
    content: [{ type: "text" as const, text }],
    api: "faux",
    provider: "faux",
    model: "faux-1",
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
    stopReason: "stop" as const,
    timestamp: Date.now(),
  };
}

function user(text: string) {
  return { role: "user" as const, content: [{ type: "text" as const, text }], timestamp: Date.now() };
}

describe("forkActiveBranch", () => {
  let dir: string;
  let parentFile: string;
  let activeLeaf: string;
  let abandoned: string[];

  beforeEach(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "fork-")));
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    manager.appendMessage(user("first"));
    const firstAnswer = manager.appendMessage(assistant("answer one"));
    abandoned = [manager.appendMessage(user("abandoned")), manager.appendMessage(assistant("abandoned answer"))];
    manager.branch(firstAnswer);
    manager.appendMessage(user("active"));
    activeLeaf = manager.appendMessage(assistant("active answer"));
    parentFile = manager.getSessionFile() ?? "";
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function message() {
    return buildHandoffMessage({
      handoffId: "20261130-000000-feat-abcd",
      manifestPath: join(dir, "m.json"),
      branch: "feat",
      baseRef: "main",
      baseSha: "c".repeat(40),
      worktreePath: join(dir, "wt"),
      mainCheckout: join(dir, "repo"),
      parentSessionFile: parentFile,
    });
  }

  function fork(leafId = activeLeaf) {
    return forkActiveBranch({ parentSessionFile: parentFile, leafId, childCwd: join(dir, "wt"), childSessionDir: join(dir, "child-sessions"), message: message() });
  }

  it("copies only the active branch and appends exactly one handoff message", () => {
    const before = sha256(parentFile);
    const result = fork();
    expect(result.forkedFromCopy).toBe(false);
    expect(result.childSessionFile.startsWith(join(dir, "child-sessions") + "/")).toBe(true);
    const entries = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    expect(entries[0]).toMatchObject({ type: "session", cwd: join(dir, "wt"), parentSession: parentFile, id: result.childSessionId });
    const body = entries.slice(1) as SessionEntry[];
    expect(body.map((e) => e.id)).not.toContain(abandoned[0]);
    expect(body.map((e) => e.id)).not.toContain(abandoned[1]);
    const last = body.at(-1);
    expect(last).toMatchObject({ type: "custom_message", customType: "handoff-worktree", parentId: activeLeaf, display: true });
    const parentEntries = parseSessionEntries(readFileSync(parentFile, "utf8")).slice(1) as SessionEntry[];
    const parentContext = buildSessionContext(parentEntries, activeLeaf);
    const childContext = buildSessionContext(body, last?.id);
    expect(childContext.messages.slice(0, -1)).toEqual(parentContext.messages);
    expect(sha256(parentFile)).toBe(before);
  });

  it("forks from a private copy when the parent lacks a final newline, leaving it byte-identical", () => {
    writeFileSync(parentFile, readFileSync(parentFile, "utf8").replace(/\n$/, ""));
    expect(openWouldWrite(parentFile)).toBe(true);
    const before = sha256(parentFile);
    const result = fork();
    expect(result.forkedFromCopy).toBe(true);
    expect(sha256(parentFile)).toBe(before);
    const header = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"))[0];
    expect(header).toMatchObject({ parentSession: parentFile, cwd: join(dir, "wt") });
  });

  it("forks from a private copy when the parent has an older version, leaving it byte-identical", () => {
    const lines = readFileSync(parentFile, "utf8").split("\n");
    const header = JSON.parse(lines[0] ?? "{}");
    lines[0] = JSON.stringify({ ...header, version: 2 });
    writeFileSync(parentFile, lines.join("\n"));
    expect(openWouldWrite(parentFile)).toBe(true);
    const before = sha256(parentFile);
    const result = fork();
    expect(result.forkedFromCopy).toBe(true);
    expect(sha256(parentFile)).toBe(before);
    const child = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    expect(child[0]).toMatchObject({ version: 3, parentSession: parentFile });
    expect(child.filter((e) => e.type === "custom_message")).toHaveLength(1);
  });

  it("refuses a leaf that is not in the parent, in one sentence, writing nothing", () => {
    const before = sha256(parentFile);
    expect(() => fork("deadbeef")).toThrow(new ForkError(`The active entry deadbeef is not in ${parentFile}.`));
    expect(sha256(parentFile)).toBe(before);
  });
});
