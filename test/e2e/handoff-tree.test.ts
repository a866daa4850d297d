/**
 * `pi-handoff tree` over a three-level tree the real Pi made with the faux provider (whose messages
 * carry usage): a root conversation hands off to feat/a, whose conversation hands off to feat/b,
 * and each session is asked something of its own. Every node's own and total figures are checked
 * against a hand count made with Pi's own parser, and the copied part of a child (which carries
 * its parent's usage) is checked to be left out. Then the grandchild is removed (its node stays,
 * marked removed, counted while its session file is there) and its session file deleted (the node
 * says so, and counts nothing).
 */
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { HANDOFF_MESSAGE_TYPE } from "../../src/session/handoff-message.ts";
import { TreeReportSchema, type TreeNode } from "../../src/tree/tree-report.ts";
import type { UsageTotals } from "../../src/session/usage.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  PROJECT_ROOT,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { killAndWait } from "../support/recovery-rig.ts";
import { startPrivateTmux, waitFor, type PrivateTmux, paneEnv } from "../support/tmux.ts";

const BIN = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");

/** Pi's usage of a session's entries after `handoffId`'s message (all of them without one), counted by hand. */
function handCount(sessionFile: string, handoffId?: string): { own: UsageTotals; copied: UsageTotals } {
  const entries = readEntries(sessionFile);
  const mark =
    handoffId === undefined
      ? -1
      : entries.findIndex(
          (entry) =>
            entry.type === "custom_message" &&
            entry.customType === HANDOFF_MESSAGE_TYPE &&
            (entry.details as { handoffId?: string } | undefined)?.handoffId === handoffId,
        );
  if (handoffId !== undefined && mark === -1) throw new Error(`no handoff message for ${handoffId}`);
  const sum = (from: number, to: number): UsageTotals => {
    const total: UsageTotals = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
    for (const entry of entries.slice(from, to)) {
      if (entry.type !== "message" || entry.message.role !== "assistant") continue;
      const usage = entry.message.usage;
      total.input += usage.input;
      total.output += usage.output;
      total.cacheRead += usage.cacheRead;
      total.cacheWrite += usage.cacheWrite;
      total.cost += usage.cost.total;
    }
    return total;
  };
  return { own: sum(mark + 1, entries.length), copied: sum(0, Math.max(mark, 0)) };
}

const plus = (a: UsageTotals, b: UsageTotals): UsageTotals => ({
  input: a.input + b.input,
  output: a.output + b.output,
  cacheRead: a.cacheRead + b.cacheRead,
  cacheWrite: a.cacheWrite + b.cacheWrite,
  cost: a.cost + b.cost,
});
const tokens = (u: UsageTotals) => u.input + u.output + u.cacheRead + u.cacheWrite;

describe("pi-handoff tree with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;
  let tmuxEnv: Record<string, string>;
  let store: ManifestStore;
  let rootFile: string;
  let a: Manifest;
  let b: Manifest;

  /** A print-mode handoff from `session`, as if typed in the parent's tmux pane; the child's Pi is then stopped. */
  async function handOff(session: string, cwd: string, branch: string): Promise<Manifest> {
    const before = new Set((await store.list()).map((entry) => entry.id));
    const run = spawnSync(
      NODE_BIN,
      [
        PI_CLI,
        "-p",
        "--session",
        session,
        "--model",
        FAUX_MODEL,
        "--extension",
        EXTENSION_ENTRY,
        `/handoff-worktree ${branch} --no-focus`,
      ],
      { cwd, env: tmuxEnv, encoding: "utf8", timeout: 120_000, stdio: ["ignore", "pipe", "pipe"] },
    );
    expect(run.stderr).toContain(`Handed off to branch ${branch}`);
    const entry = (await store.list()).find((listed) => !before.has(listed.id));
    if (entry === undefined || !entry.ok) throw new Error("no manifest");
    const manifest = entry.manifest;
    // Its session gets a question of its own below: one writer at a time.
    await waitFor(() => !existsSync(`${store.pathFor(manifest.id)}.lock`), { description: "the acknowledgement" });
    await killAndWait(manifest.child.pid ?? 0);
    return manifest;
  }

  function cli(args: string[]): { status: number; stdout: string; stderr: string } {
    const run = spawnSync(NODE_BIN, [BIN, ...args], {
      cwd: repo.root,
      env: sandbox.env,
      encoding: "utf8",
      timeout: 60_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
  }

  function tree(): TreeNode {
    const run = cli(["tree", "--json"]);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const report = TreeReportSchema.parse(JSON.parse(run.stdout));
    expect(report.roots).toHaveLength(1);
    const root = report.roots[0];
    if (root === undefined) throw new Error("no root");
    expect(report.total).toEqual(root.total);
    return root;
  }

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-tree-");
    repo = createTempRepo();
    tmux = await startPrivateTmux({ env: sandbox.env });
    tmuxEnv = {
      ...sandbox.env,
      ...(await paneEnv(tmux)),
      PI_HANDOFF_CONFIRM_TIMEOUT_MS: "40000",
    };
    store = ManifestStore.forAgentDir(sandbox.agentDir);
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "the root's first question"]);
    rootFile = onlySessionFile(sandbox, repo.root);
    runPiPrint(sandbox, repo.root, ["--session", rootFile, "--model", FAUX_MODEL, "the root's second question"]);
    a = await handOff(rootFile, repo.root, "feat/a");
    const aFile = a.child.sessionFile ?? "";
    runPiPrint(sandbox, a.worktree.path, ["--session", aFile, "--model", FAUX_MODEL, "feat/a asks something"]);
    b = await handOff(aFile, a.worktree.path, "feat/b");
    const bFile = b.child.sessionFile ?? "";
    runPiPrint(sandbox, b.worktree.path, ["--session", bFile, "--model", FAUX_MODEL, "feat/b asks once"]);
    runPiPrint(sandbox, b.worktree.path, ["--session", bFile, "--model", FAUX_MODEL, "feat/b asks twice"]);
    // The root goes on after handing off: that counts for the root, not for its children.
    runPiPrint(sandbox, repo.root, ["--session", rootFile, "--model", FAUX_MODEL, "the root goes on"]);
  }, 240_000);

  afterAll(async () => {
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("gives every node its own figure, counted after its fork point, and its subtree's total", () => {
    const root = hand(rootFile);
    const ownA = handCount(a.child.sessionFile ?? "", a.id);
    const ownB = handCount(b.child.sessionFile ?? "", b.id);
    // The children's copies carry their parents' usage: what must not be counted again.
    expect(tokens(ownA.copied)).toBeGreaterThan(0);
    expect(tokens(ownB.copied)).toBeGreaterThan(tokens(ownA.own));
    expect(tokens(ownA.own)).toBeGreaterThan(0);
    expect(tokens(ownB.own)).toBeGreaterThan(0);

    const node = tree();
    expect(node.handoff).toBeUndefined();
    expect(node.session).toMatchObject({ code: "read", file: rootFile, pending: false });
    expect([node.usage, node.own, node.forkPoint]).toEqual([root, root, "start"]);
    const [nodeA] = node.children;
    expect(node.children).toHaveLength(1);
    expect(nodeA?.handoff).toMatchObject({ code: "handoff", id: a.id, branch: "feat/a", state: "running" });
    expect(nodeA?.handoff).toMatchObject({ ahead: 0, behind: 0, landed: false, removed: false });
    expect([nodeA?.usage, nodeA?.own, nodeA?.forkPoint]).toEqual([ownA.own, ownA.own, "handoff_message"]);
    const [nodeB] = nodeA?.children ?? [];
    expect(nodeA?.children).toHaveLength(1);
    expect(nodeB?.handoff).toMatchObject({ code: "handoff", id: b.id, branch: "feat/b", state: "running" });
    expect([nodeB?.usage, nodeB?.own, nodeB?.total, nodeB?.children]).toEqual([ownB.own, ownB.own, ownB.own, []]);
    expect(nodeA?.total).toEqual(plus(ownA.own, ownB.own));
    expect(node.total).toEqual(plus(root, plus(ownA.own, ownB.own)));
    expect(nodeB?.runs).toEqual([]);
  });

  it("draws the tree as text, one line per node", () => {
    const run = cli(["tree"]);
    expect(run.status).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(new RegExp(`^${escape(rootFile)}  own [0-9,]+ tokens, \\$0\\.0000  total [0-9,]+ tokens`));
    expect(lines[1]).toMatch(
      new RegExp(`^└─ feat/a \\(${a.id}\\)  .*  0 ahead, 0 behind  own [0-9,]+ tokens, \\$0\\.0000  total `),
    );
    expect(lines[2]).toMatch(new RegExp(`^   └─ feat/b \\(${b.id}\\)  .*  own [0-9,]+ tokens, \\$0\\.0000$`));
    expect(lines[3]).toBe("(tokens: input + output + cache read + cache write as Pi records them; --json has each)");
    // From a handoff: its subtree only.
    const fromA = cli(["tree", "feat/a"]).stdout.trimEnd().split("\n");
    expect(fromA.map((line) => line.split("  ")[0])).toEqual([
      `feat/a (${a.id})`,
      `└─ feat/b (${b.id})`,
      expect.any(String),
    ]);
  });

  it("keeps a removed handoff's node while its session file exists, and says so once it is gone", () => {
    const removed = cli(["remove", b.id, "--force"]);
    expect(removed.status).toBe(0);
    const ownA = handCount(a.child.sessionFile ?? "", a.id).own;
    const ownB = handCount(b.child.sessionFile ?? "", b.id).own;
    const kept = tree().children[0]?.children[0];
    expect(kept?.handoff).toMatchObject({
      code: "handoff",
      id: b.id,
      state: "removed",
      status: "removed",
      removed: true,
    });
    expect(kept?.own).toEqual(ownB);
    rmSync(b.child.sessionFile ?? "");
    const nodeA = tree().children[0];
    const gone = nodeA?.children[0];
    expect(gone?.session).toEqual({ code: "missing", file: b.child.sessionFile });
    expect(gone?.own).toEqual({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 });
    expect(nodeA?.total).toEqual(ownA);
    expect(cli(["tree"]).stdout).toContain(`session file gone (${b.child.sessionFile})`);
  });
});

function hand(file: string): UsageTotals {
  return handCount(file).own;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
