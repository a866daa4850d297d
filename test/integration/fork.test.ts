/**
 * The fork with Pi's real SessionManager on real session files: only the active branch is copied,
 * one handoff message is appended, and the parent file keeps every byte, including the cases
 * where SessionManager.open would write to it (no final newline, an older version).
 */
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  buildSessionContext,
  CURRENT_SESSION_VERSION,
  getPackageDir,
  parseSessionEntries,
  SessionManager,
  type SessionEntry,
} from "@earendil-works/pi-coding-agent";
import { LEAN_WRITER_SESSION_VERSION } from "../../src/session/active-path.ts";
import { ForkError, type ForkRequest, forkActiveBranch } from "../../src/session/fork.ts";
import { ForkWorker, locatePiSessionModule, runFork } from "../../src/session/fork-runner.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

function assistant(text: string) {
  return {
    role: "assistant" as const,
    content: [{ type: "text" as const, text }],
    api: "faux",
    provider: "faux",
    model: "faux-1",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop" as const,
    timestamp: Date.now(),
  };
}

function user(text: string) {
  return { role: "user" as const, content: [{ type: "text" as const, text }], timestamp: Date.now() };
}

const host = { SessionManager, CURRENT_SESSION_VERSION };
const sessionModulePath = locatePiSessionModule(getPackageDir());

describe.each([
  ["on this thread", undefined],
  ["in a worker", sessionModulePath],
])("the fork %s", (_where, modulePath) => {
  it("has Pi's session module on disk for the worker", () => {
    expect(sessionModulePath).toMatch(/dist\/core\/session-manager\.js$/);
  });

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
    const request: ForkRequest = {
      parentSessionFile: parentFile,
      leafId,
      childCwd: join(dir, "wt"),
      childSessionDir: join(dir, "child-sessions"),
      message: message(),
    };
    return runFork(request, { sessionModulePath: modulePath, host });
  }

  it("copies only the active branch and appends exactly one handoff message", async () => {
    const before = sha256(parentFile);
    const result = await fork();
    expect(result).toMatchObject({ pathEntries: 4, parentEntries: 6 });
    expect(result.childSessionFile.startsWith(join(dir, "child-sessions") + "/")).toBe(true);
    const entries = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    expect(entries[0]).toMatchObject({
      type: "session",
      cwd: join(dir, "wt"),
      parentSession: parentFile,
      id: result.childSessionId,
    });
    const body = entries.slice(1) as SessionEntry[];
    expect(body.map((e) => e.id)).not.toContain(abandoned[0]);
    expect(body.map((e) => e.id)).not.toContain(abandoned[1]);
    const last = body.at(-1);
    expect(last).toMatchObject({
      type: "custom_message",
      customType: "handoff-worktree",
      parentId: activeLeaf,
      display: true,
    });
    const parentEntries = parseSessionEntries(readFileSync(parentFile, "utf8")).slice(1) as SessionEntry[];
    const parentContext = buildSessionContext(parentEntries, activeLeaf);
    const childContext = buildSessionContext(body, last?.id);
    expect(childContext.messages.slice(0, -1)).toEqual(parentContext.messages);
    expect(sha256(parentFile)).toBe(before);
  });

  it("leaves a parent without a final newline byte-identical (SessionManager.open would append one)", async () => {
    writeFileSync(parentFile, readFileSync(parentFile, "utf8").replace(/\n$/, ""));
    const before = sha256(parentFile);
    const result = await fork();
    expect(sha256(parentFile)).toBe(before);
    const header = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"))[0];
    expect(header).toMatchObject({ parentSession: parentFile, cwd: join(dir, "wt") });
  });

  it("leaves a parent of an older version byte-identical (SessionManager.open would migrate it)", async () => {
    const lines = readFileSync(parentFile, "utf8").split("\n");
    const header = JSON.parse(lines[0] ?? "{}");
    lines[0] = JSON.stringify({ ...header, version: 2 });
    writeFileSync(parentFile, lines.join("\n"));
    const before = sha256(parentFile);
    const result = await fork();
    expect(sha256(parentFile)).toBe(before);
    const child = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    expect(child[0]).toMatchObject({ version: 3, parentSession: parentFile });
    expect(child.filter((e) => e.type === "custom_message")).toHaveLength(1);
  });

  it("goes through Pi's SessionManager when Pi calls another format current: the lean writer runs only for the one it was checked against", async () => {
    const opened: string[] = [];
    const spying = {
      open: (...args: Parameters<typeof SessionManager.open>) => {
        opened.push(args[0]);
        return SessionManager.open(...args);
      },
    };
    const request: ForkRequest = {
      parentSessionFile: parentFile,
      leafId: activeLeaf,
      childCwd: join(dir, "wt"),
      childSessionDir: join(dir, "child-sessions"),
      message: message(),
    };
    await forkActiveBranch(request, { SessionManager: spying, CURRENT_SESSION_VERSION: LEAN_WRITER_SESSION_VERSION });
    expect(opened).toEqual([]);
    // A file that Pi wrote in its new format.
    const lines = readFileSync(parentFile, "utf8").split("\n");
    lines[0] = JSON.stringify({ ...JSON.parse(lines[0] ?? "{}"), version: LEAN_WRITER_SESSION_VERSION + 1 });
    writeFileSync(parentFile, lines.join("\n"));
    const before = sha256(parentFile);
    const result = await forkActiveBranch(request, {
      SessionManager: spying,
      CURRENT_SESSION_VERSION: LEAN_WRITER_SESSION_VERSION + 1,
    });
    expect(opened).toHaveLength(1);
    expect(opened[0]).not.toBe(parentFile);
    expect(sha256(parentFile)).toBe(before);
    const child = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    expect(child[0]).toMatchObject({ cwd: join(dir, "wt"), parentSession: parentFile });
    expect(child.filter((e) => e.type === "custom_message")).toHaveLength(1);
  });

  it("refuses a leaf that is not in the parent, in one sentence, writing nothing", async () => {
    const before = sha256(parentFile);
    await expect(fork("deadbeef")).rejects.toThrow(new ForkError(`The active entry deadbeef is not in ${parentFile}.`));
    expect(sha256(parentFile)).toBe(before);
  });

  it("keeps labels on the active path and drops the abandoned branch's", async () => {
    const manager = SessionManager.open(parentFile);
    const activeUser = manager
      .getBranch(activeLeaf)
      .find(
        (e) =>
          e.type === "message" && e.message.role === "user" && JSON.stringify(e.message.content).includes("active"),
      );
    manager.appendLabelChange(activeUser?.id ?? "", "checkpoint");
    manager.appendLabelChange(abandoned[0] ?? "", "dead end");
    // The label entries extend the file; the active leaf stays where the live session had it.
    const result = await fork();
    const child = new Map<string, string>();
    for (const e of parseSessionEntries(readFileSync(result.childSessionFile, "utf8"))) {
      if (e.type === "label" && e.label !== undefined) child.set(e.targetId, e.label);
    }
    expect([...child.entries()]).toEqual([[activeUser?.id, "checkpoint"]]);
  });
});

describe("the fork runner", () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A one-exchange parent session in a new temp dir, and the request that forks it for `branch`. */
  function oneExchange(branch: string): ForkRequest {
    dir = realpathSync(mkdtempSync(join(tmpdir(), `fork-${branch}-`)));
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    manager.appendMessage(user("only question"));
    const leaf = manager.appendMessage(assistant("only answer"));
    const parentFile = manager.getSessionFile() ?? "";
    return {
      parentSessionFile: parentFile,
      leafId: leaf,
      childCwd: join(dir, "wt"),
      childSessionDir: join(dir, "child"),
      message: buildHandoffMessage({
        handoffId: `20261130-000000-${branch}-abcd`,
        manifestPath: join(dir, "m.json"),
        branch,
        baseRef: "HEAD",
        baseSha: "d".repeat(40),
        worktreePath: join(dir, "wt"),
        mainCheckout: join(dir, "repo"),
        parentSessionFile: parentFile,
      }),
    };
  }

  it("falls back to this thread when the worker cannot load Pi's session module", async () => {
    const request = oneExchange("fallback");
    const result = await runFork(request, { sessionModulePath: join(dir, "no-such-module.js"), host });
    expect(result.pathEntries).toBe(2);
    const child = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    expect(child.filter((e) => e.type === "custom_message")).toHaveLength(1);
  });

  it("forks in the worker itself: it loads the package's TypeScript through the shared loader, with no fallback", async () => {
    const request = oneExchange("worker");
    // ForkWorker.fork rejects (ForkWorkerUnavailable) where runFork would quietly fork on this thread.
    const stripped = join(dir, "stripped");
    const worker = ForkWorker.start(sessionModulePath ?? "", CURRENT_SESSION_VERSION, { strippedCacheDir: stripped });
    const result = await worker.fork(request);
    expect(result.pathEntries).toBe(2);
    const child = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    expect(child[0]).toMatchObject({ type: "session", cwd: join(dir, "wt") });
    expect(child.filter((e) => e.type === "custom_message")).toHaveLength(1);
    // The worker's TypeScript came through the shared loader: it kept what it stripped, fork.ts included.
    const kept = readdirSync(stripped).filter((name) => name.endsWith(".js"));
    expect(kept.length).toBeGreaterThan(3);
    expect(
      kept.some((name) =>
        readFileSync(join(stripped, name), "utf8").includes("export async function forkActiveBranch"),
      ),
    ).toBe(true);
  });
});
