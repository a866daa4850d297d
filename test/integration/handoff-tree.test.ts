/**
 * The handoff tree (src/tree/tree.ts) over a real store and a real git repository, with
 * hand-written sessions: a manifest this version cannot read is shown with what it still says; the
 * runs a session started count with the cost their pi-subagents record gives (once, at the session
 * that started them) and one without a recorded cost is said so; the
 * widget's subtree total is the tree's; and the command line takes `tree` with or without a handoff.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchChildren } from "../../pi-extension/children-view.ts";
import { indexSegment } from "../../src/adoption/sources/pi-subagents-layout.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { parseRecoveryCommand } from "../../src/cli/command-line.ts";
import { createRecoveryDeps } from "../../src/cli/deps.ts";
import { RunCostReader } from "../../src/tree/run-costs.ts";
import { buildTree, formatTree, subtreeTotal, SubtreeTotalLine } from "../../src/tree/tree.ts";
import { TreeReportSchema } from "../../src/tree/tree-report.ts";
import { HANDOFF_MESSAGE_TYPE } from "../../src/session/handoff-message.ts";
import { SessionUsageCache } from "../../src/session/usage.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { storeRunningHandoff } from "../support/running-handoff.ts";
import { waitFor } from "../support/tmux.ts";

const line = (value: unknown) => `${JSON.stringify(value)}\n`;
const assistant = (input: number, cost = 0) =>
  line({
    type: "message",
    message: {
      role: "assistant",
      content: [],
      usage: { input, output: 0, cacheRead: 0, cacheWrite: 0, cost: { total: cost } },
    },
  });
const header = line({ type: "session", version: 3, id: "s", cwd: "/r" });
const handoffMessage = (handoffId: string) =>
  line({ type: "custom_message", customType: HANDOFF_MESSAGE_TYPE, content: "c", details: { handoffId } });
const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };

describe("a middle session's figures", () => {
  let dir: string;
  let repo: TempRepo;
  let agentDir: string;
  let aFile: string;
  let aId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "phw-tree-mid-"));
    repo = createTempRepo();
    agentDir = join(dir, "agent");
    const store = ManifestStore.forAgentDir(agentDir);
    const rootFile = join(dir, "root.jsonl");
    aFile = join(dir, "a.jsonl");
    const bFile = join(dir, "b.jsonl");
    const sha = repo.run(["rev-parse", "HEAD"]).trim();
    const made = (branch: string, at: string, parent: string, child: string) =>
      storeRunningHandoff(store, {
        branch,
        at,
        parent: { sessionFile: parent, sessionId: `${branch}-parent` },
        child: { sessionFile: child },
        worktreeRoot: join(dir, "worktrees"),
        repo: { root: repo.root, base: { ref: "main", sha } },
      });
    aId = (await made("feat/a", "2026-12-06T10:00:00.000Z", rootFile, aFile)).id;
    const bId = (await made("feat/b", "2026-12-06T11:00:00.000Z", aFile, bFile)).id;
    // Each child's file begins with the copy of its parent's path, as the fork writes it.
    const root = header + assistant(100);
    const a = root + handoffMessage(aId) + assistant(7);
    writeFileSync(rootFile, root);
    writeFileSync(aFile, a);
    writeFileSync(bFile, a + handoffMessage(bId) + assistant(3));
    // A handoff from A killed after its fork wrote the child session, before the manifest named it:
    // both figures find that session through the manifest's intent.
    const c = await made("feat/c", "2026-12-06T12:00:00.000Z", aFile, join(dir, "unused.jsonl"));
    const sessionDir = join(dir, "c-sessions");
    await store.update(c.id, (manifest) => {
      manifest.child = { ackAt: "2026-12-06T12:00:00.000Z" };
      manifest.intent = { sessionDir };
    });
    mkdirSync(sessionDir);
    const cHeader = line({
      type: "session",
      version: 3,
      id: "c-session",
      timestamp: "2026-12-06T12:00:01.000Z",
      cwd: join(dir, "worktrees", "feat/c"),
      parentSession: aFile,
    });
    writeFileSync(
      join(sessionDir, "c.jsonl"),
      cHeader + assistant(100) + handoffMessage(aId) + assistant(7) + handoffMessage(c.id) + assistant(5),
    );
  });

  afterAll(() => {
    repo?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the widget of a Pi that is itself a handoff's child says its tree node's total, its parent's copy not counted", async () => {
    const deps = {
      ...createRecoveryDeps({ ...repo.env, PI_CODING_AGENT_DIR: agentDir }),
      usage: new SessionUsageCache(undefined),
      runs: new RunCostReader({}, []),
    };
    const built = await buildTree(deps, { code: "repo" });
    if (built.code !== "built") throw new Error(built.message);
    const a = built.report.roots[0]?.children[0];
    expect([a?.handoff?.id, a?.own, a?.children.map((child) => child.own.input)]).toEqual([
      aId,
      { ...zero, input: 7 },
      [3, 5],
    ]);
    expect(a?.total).toEqual({ ...zero, input: 15 });
    expect(await subtreeTotal(deps, aFile)).toEqual(a?.total);
    let changes = 0;
    const line = new SubtreeTotalLine({
      store: deps.store,
      usage: new SessionUsageCache(undefined),
      runs: () => new RunCostReader({}, []),
      session: { file: aFile },
      onChange: () => {
        changes += 1;
      },
    });
    line.line(0);
    await waitFor(() => changes === 1, { description: "the middle widget's first computation" });
    expect(line.line(1)).toBe("tree total: 15 tokens, $0.0000 (this session and its handoffs)");
  });
});

describe("the handoff tree over a real store", () => {
  let dir: string;
  let repo: TempRepo;
  let store: ManifestStore;
  let agentDir: string;
  let subagents: string;
  let rootFile: string;
  let childFile: string;
  let oldFile: string;
  let childId: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "phw-tree-"));
    repo = createTempRepo();
    agentDir = join(dir, "agent");
    subagents = join(dir, "pi-subagents");
    store = ManifestStore.forAgentDir(agentDir);
    rootFile = join(dir, "root.jsonl");
    childFile = join(dir, "child.jsonl");
    oldFile = join(dir, "old.jsonl");
    writeFileSync(rootFile, header + assistant(100, 1));
    const sha = repo.run(["rev-parse", "HEAD"]).trim();
    const child = await storeRunningHandoff(store, {
      branch: "feat/child",
      at: "2026-12-06T10:00:00.000Z",
      parent: { sessionFile: rootFile, sessionId: "root-id" },
      child: { sessionFile: childFile },
      worktreeRoot: join(dir, "worktrees"),
      repo: { root: repo.root, base: { ref: "main", sha } },
    });
    childId = child.id;
    writeFileSync(childFile, header + assistant(100, 1) + handoffMessage(child.id) + assistant(7, 0.5));
    // An older manifest: version 0, a shape this version refuses, naming the root as its parent.
    writeFileSync(oldFile, header + assistant(100, 1) + handoffMessage("20261201-000000-old-abcd") + assistant(3));
    writeFileSync(
      join(store.dir, "20261201-000000-old-abcd.json"),
      JSON.stringify({
        version: 0,
        id: "20261201-000000-old-abcd",
        createdAt: "2026-12-01T00:00:00.000Z",
        branch: "feat/old",
        state: "running",
        repo: { root: repo.root, commonDir: child.repo.commonDir },
        parent: { sessionFile: rootFile },
        child: { sessionFile: oldFile },
      }),
    );
    // A manifest file that is not even JSON: a tree of its own, saying so.
    writeFileSync(join(store.dir, "20261202-000000-junk-abcd.json"), "{ not json");
    // Two runs the child started: one whose record says its cost, one that says nothing of it.
    const runs = join(subagents, "async-subagent-runs");
    const status = (runId: string, extra: object) => {
      mkdirSync(join(runs, runId), { recursive: true });
      writeFileSync(
        join(runs, runId, "status.json"),
        JSON.stringify({ runId, sessionId: childFile, mode: "single", state: "complete", ...extra }),
      );
    };
    status("run-priced", { totalCost: { inputTokens: 40, outputTokens: 2, costUsd: 0.25 } });
    status("run-unpriced", { state: "running" });
    const markers = join(runs, ".terminal-runs", indexSegment(childFile));
    mkdirSync(markers, { recursive: true });
    writeFileSync(
      join(markers, "0000001796000000-run-priced.json"),
      JSON.stringify({ version: 1, runId: "run-priced", sessionId: childFile, endedAt: 1796000000 }),
    );
    mkdirSync(join(runs, ".active-runs"), { recursive: true });
    writeFileSync(join(runs, ".active-runs", "run-unpriced"), "");
  });

  afterAll(() => {
    repo?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const deps = () => ({
    ...createRecoveryDeps({ ...repo.env, PI_CODING_AGENT_DIR: agentDir }),
    usage: new SessionUsageCache(undefined),
    runs: new RunCostReader({}, [subagents]),
  });

  it("shows an unreadable manifest with what it has, and counts each run once with its recorded cost", async () => {
    const built = await buildTree(deps(), { code: "repo" });
    if (built.code !== "built") throw new Error(built.message);
    const report = TreeReportSchema.parse(built.report);
    const [root, junk] = report.roots;
    expect(report.roots).toHaveLength(2);
    expect(junk).toMatchObject({
      handoff: { code: "unreadable", id: "20261202-000000-junk-abcd" },
      session: { code: "none" },
      own: zero,
      children: [],
    });
    expect(root?.session).toEqual({ code: "read", file: rootFile, bytes: expect.any(Number), pending: false });
    expect(root?.own).toEqual({ ...zero, input: 100, cost: 1 });
    const [old, child] = root?.children ?? [];
    expect(old?.handoff).toMatchObject({
      code: "unreadable",
      id: "20261201-000000-old-abcd",
      branch: "feat/old",
      state: "running",
    });
    expect([old?.own, old?.forkPoint]).toEqual([{ ...zero, input: 3 }, "handoff_message"]);
    expect(child?.handoff).toMatchObject({ code: "handoff", id: childId, branch: "feat/child", removed: false });
    expect(child?.usage).toEqual({ ...zero, input: 7, cost: 0.5 });
    expect(child?.runs).toEqual([
      {
        source: "pi-subagents",
        runId: "run-priced",
        state: "complete",
        cost: { inputTokens: 40, outputTokens: 2, dollars: 0.25 },
      },
      { source: "pi-subagents", runId: "run-unpriced", state: "running" },
    ]);
    expect(child?.own).toEqual({ ...zero, input: 47, output: 2, cost: 0.75 });
    expect(root?.total).toEqual({ ...zero, input: 150, output: 2, cost: 1.75 });
    expect(report.total).toEqual(root?.total);
    expect(formatTree(report)).toContain("\n? (20261202-000000-junk-abcd)  manifest unreadable: ");
    const text = formatTree(report).split("\n");
    expect(text[1]).toMatch(/^├─ feat\/old \(20261201-000000-old-abcd\)  manifest unreadable \(state running\): /);
    expect(text[2]).toMatch(
      new RegExp(
        `^└─ feat/child \\(${childId}\\)  .*  2 runs started \\(1 without a recorded cost\\)  own 49 tokens, \\$0\\.7500$`,
      ),
    );
    // The widget's figure is the same total, without the inventory.
    expect(await subtreeTotal(deps(), rootFile)).toEqual(root?.total);
    expect(await subtreeTotal(deps(), childFile)).toBeUndefined();
  });

  it("starts from a session file or a handoff, and says when a handoff is not there", async () => {
    const fromChild = await buildTree(deps(), { code: "session", file: childFile });
    expect(fromChild.code === "built" && fromChild.report.roots.map((node) => node.handoff?.id)).toEqual([childId]);
    const fromId = await buildTree(deps(), { code: "handoff", id: childId });
    expect(fromId.code === "built" && fromId.report.roots[0]?.own.input).toBe(47);
    expect(await buildTree(deps(), { code: "handoff", id: "nope" })).toEqual({
      code: "not_found",
      message: "There is no handoff with id nope.",
    });
  });

  it("gives the widget its line once computed, and says when it changed", async () => {
    let changes = 0;
    const total = new SubtreeTotalLine({
      store,
      usage: new SessionUsageCache(undefined),
      runs: () => new RunCostReader({}, [subagents]),
      session: { file: rootFile },
      onChange: () => {
        changes += 1;
      },
    });
    expect(total.line(0)).toBeUndefined();
    await waitFor(() => changes === 1, { description: "the first computation" });
    expect(total.line(1)).toBe("tree total: 152 tokens, $1.75 (this session and its handoffs)");
  });

  it("the parent's widget gains the line once it is computed, after its handoffs' rows", async () => {
    let changes = 0;
    const view = watchChildren({
      store,
      agentDir,
      parent: { sessionFile: rootFile, sessionId: "root-id" },
      onChange: () => {
        changes += 1;
      },
    });
    try {
      const own = [{ id: childId, branch: "feat/child", status: { state: "idle" as const, basis: "test" } }];
      const rows = view.format(own, Date.now());
      expect(rows).toHaveLength(1);
      await waitFor(() => changes > 0, { description: "the widget told of the new line" });
      // The widget's own rows as they were, then the tree's total (pi-subagents' runs read from the environment: none here).
      expect(view.format(own, Date.now())).toEqual([
        ...rows,
        "tree total: 110 tokens, $1.50 (this session and its handoffs)",
      ]);
    } finally {
      view.watch.stop();
    }
  });

  it("parses tree with or without a handoff, and nothing more", () => {
    expect(parseRecoveryCommand(["tree"], "pi-handoff --help")).toEqual({
      ok: true,
      parsed: { command: "tree", flags: {} },
    });
    expect(parseRecoveryCommand(["tree", "feat/x", "--json"], "pi-handoff --help")).toEqual({
      ok: true,
      parsed: { command: "tree", handoff: "feat/x", flags: { json: true } },
    });
    expect(parseRecoveryCommand(["tree", "a", "b"], "pi-handoff --help")).toEqual({
      ok: false,
      command: "tree",
      message: 'Unexpected "b" (see pi-handoff --help).',
    });
  });
});
