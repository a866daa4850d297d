/**
 * End to end on Herdr: the real Pi (faux provider, offline) runs in a pane of the Herdr test double
 * (HERDR_ENV=1, its own socket and binary, no $TMUX) and hands a real conversation off to a real
 * child Pi in a new Herdr workspace. The same assertions as the tmux e2e, plus the order of the
 * Herdr calls the handoff made. Then print-mode runs "inside" a pane: a refusal when Herdr's
 * server is down, and an injected Herdr fault that leaves a retained, recorded handoff.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSessionContext } from "@earendil-works/pi-coding-agent";
import { ManifestSchema, type Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { startHerdrDouble, type HerdrCall, type HerdrDouble } from "../support/herdr.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  PI_CLI,
  piTuiCommand,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { waitFor } from "../support/tmux.ts";
import {
  buildParentWithAbandonedBranch,
  entriesOnly,
  HANDOFF_STARTED,
  PI_READY,
  sha256OfFile,
  submitLine,
  textOf,
  herdrPane,
  waitForScreen,
} from "../support/tui.ts";

/** Each new pane's shell start-up job holds the terminal this long: the launch must wait it out. */
const SHELL_DELAY_MS = 800;

function command(call: HerdrCall): string {
  return call.argv.slice(0, 2).join(" ");
}

describe("/handoff-worktree on Herdr (the test double) with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let herdr: HerdrDouble;
  let parentPane: string;
  let parentWorkspace: string;
  let baseSha: string;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-pi-herdr-");
    repo = createTempRepo({ extraCommits: 2 });
    repo.run(["tag", "v1", "HEAD~1"]);
    baseSha = repo.run(["rev-parse", "v1"]);
    herdr = await startHerdrDouble({ env: sandbox.env, shellDelayMs: SHELL_DELAY_MS });
    const parent = await herdr.openWorkspace(repo.root, "parent");
    parentPane = parent.paneId;
    parentWorkspace = parent.workspaceId;
  });

  afterAll(async () => {
    await herdr?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("forks the active branch into a Herdr worktree, starts the child, confirms, then focuses its workspace", async () => {
    const parent = buildParentWithAbandonedBranch(sandbox, repo);
    const started = await herdr.herdr(["pane", "run", parentPane, piTuiCommand(repo.root, ["--session", parent.file])]);
    expect(started).toEqual({ exitCode: 0, stdout: "", stderr: "" });
    await waitForScreen(herdrPane(herdr, parentPane), PI_READY, "the parent TUI");

    await submitLine(herdrPane(herdr, parentPane), "live question", /faux reply to: live question/);
    const parentLeaf = await waitFor(() => {
      const last = entriesOnly(readEntries(parent.file)).at(-1);
      return last?.type === "message" && textOf(last.message) === "faux reply to: live question" ? last.id : undefined;
    }, { timeoutMs: 10_000, description: "the live turn on disk" });
    const parentHashBefore = sha256OfFile(parent.file);

    herdr.clearCalls();
    await submitLine(herdrPane(herdr, parentPane), "/handoff-worktree feat/e2e v1", HANDOFF_STARTED);
    const screen = await waitForScreen(herdrPane(herdr, parentPane), /Handed off to branch feat\/e2e|failed|did not confirm|not running/, "the handoff's final notice", 90_000);
    expect(screen).toContain("Handed off to branch feat/e2e (from v1 at " + baseSha.slice(0, 12) + ")");
    expect(screen).toMatch(/Worktree: \S+feat-e2e/);
    expect(screen).toMatch(/Window: Herdr workspace w\w+ \(pane w\w+:p1\), Pi pid \d+/);

    // The manifest: every step, in transaction order, with the Herdr location.
    const listed = await ManifestStore.forAgentDir(sandbox.agentDir).list();
    expect(listed).toHaveLength(1);
    const entry = listed[0];
    if (entry === undefined || !entry.ok) throw new Error("manifest did not decode");
    const manifest: Manifest = ManifestSchema.parse(JSON.parse(readFileSync(entry.path, "utf8")));
    expect(manifest.history.map((h) => h.state)).toEqual(["provisioning", "provisioned", "forked", "launching", "running"]);
    expect(manifest.branch).toBe("feat/e2e");
    expect(manifest.base).toEqual({ ref: "v1", sha: baseSha });
    expect(manifest.parent).toMatchObject({ sessionFile: parent.file, leafId: parentLeaf, cwd: repo.root });
    expect(manifest.child.confirmedBy).toBe("ack");
    if (manifest.mux.kind !== "herdr") throw new Error(`expected a Herdr location, got ${manifest.mux.kind}`);
    const { workspaceId, paneId } = manifest.mux;
    expect(manifest.mux).toEqual({ kind: "herdr", socketPath: herdr.socketPath, workspaceId, tabId: `${workspaceId}:t1`, paneId: `${workspaceId}:p1` });
    expect(workspaceId).not.toBe(parentWorkspace);
    // The notice ends with what to do next: Herdr's commands, with this handoff's own ids.
    expect(screen).toContain(
      `Next: you are in its workspace now; come back with herdr workspace focus ${parentWorkspace}, return with herdr workspace focus ${workspaceId}.`,
    );
    expect(screen).toContain(`pi-handoff inspect ${manifest.id}`);

    // The worktree: Herdr made it at the planned path, on the new branch, at the base commit.
    const worktree = manifest.worktree.path;
    expect(worktree).toBe(join(repo.dir, "repo.worktrees", "feat-e2e"));
    expect(repo.run(["rev-parse", "HEAD"], { cwd: worktree })).toBe(baseSha);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: worktree })).toBe("feat/e2e");
    const herdrList = (await herdr.result(["worktree", "list", "--cwd", repo.root])).worktrees as { path: string; open_workspace_id?: string }[];
    expect(herdrList.find((w) => w.path === worktree)?.open_workspace_id).toBe(workspaceId);

    // The child session: header, active branch only, plus exactly one handoff message.
    const childFile = manifest.child.sessionFile ?? "";
    const childEntries = readEntries(childFile);
    expect(childEntries[0]).toMatchObject({ type: "session", cwd: worktree, parentSession: parent.file });
    const childIds = new Set(entriesOnly(childEntries).map((e) => e.id));
    for (const id of parent.abandonedIds) expect(childIds.has(id)).toBe(false);
    const handoffEntries = entriesOnly(childEntries).filter((e) => e.type === "custom_message" && e.customType === "handoff-worktree");
    expect(handoffEntries).toHaveLength(1);
    const handoffEntry = handoffEntries[0];
    if (handoffEntry === undefined || handoffEntry.type !== "custom_message") throw new Error("no handoff entry");
    expect(handoffEntry.parentId).toBe(parentLeaf);
    expect(handoffEntry.content).toContain(baseSha);

    // The model sees the parent's context at its leaf plus the one handoff message.
    const parentContext = buildSessionContext(entriesOnly(readEntries(parent.file)), parentLeaf);
    const childContext = buildSessionContext(entriesOnly(childEntries), handoffEntry.id);
    expect(childContext.messages.slice(0, -1)).toEqual(parentContext.messages);
    expect(childContext.messages).toHaveLength(parentContext.messages.length + 1);
    expect(childContext.messages.at(-1)).toMatchObject({ role: "custom", customType: "handoff-worktree" });

    // The parent file was never written.
    expect(sha256OfFile(parent.file)).toBe(parentHashBefore);

    // The child Pi is alive, in the worktree, marked with the handoff id, inside Herdr and not tmux.
    const pid = manifest.child.pid ?? 0;
    expect(existsSync(`/proc/${pid}`)).toBe(true);
    expect(realpathSync(readlinkSync(`/proc/${pid}/cwd`))).toBe(worktree);
    expect(readFileSync(`/proc/${pid}/comm`, "utf8").trim()).toBe("pi");
    const childEnv = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    expect(childEnv).toContain(`PI_HANDOFF_ID=${manifest.id}`);
    expect(childEnv).toContain(`HERDR_PANE_ID=${paneId}`);
    expect(childEnv.filter((line) => line.startsWith("TMUX"))).toEqual([]);
    // Herdr's agent hint, and the session reported to Herdr after the acknowledgement (for its restore).
    expect(childEnv).toContain("HERDR_AGENT=pi");
    const childPaneInfo = (await herdr.result(["pane", "get", paneId ?? ""])).pane as { agent_session?: unknown; agent_status: string };
    expect(childPaneInfo.agent_session).toEqual({ source: "herdr:pi", agent: "pi", kind: "path", value: manifest.child.sessionFile });
    expect(childPaneInfo.agent_status).toBe("idle");

    // Focus came after the acknowledgement, and the child's workspace is the focused one.
    const ackAt = Date.parse(manifest.child.ackAt ?? "");
    const focus = manifest.focus;
    if (focus === undefined || "error" in focus) throw new Error(`focus not recorded: ${JSON.stringify(focus)}`);
    expect(Date.parse(focus.at)).toBeGreaterThanOrEqual(ackAt);
    expect(((await herdr.result(["workspace", "get", workspaceId ?? ""])).workspace as { focused: boolean }).focused).toBe(true);
    expect(((await herdr.result(["workspace", "get", parentWorkspace])).workspace as { focused: boolean }).focused).toBe(false);

    // The Herdr calls the handoff made, in order: create, poll the new pane's shell, type, focus after the ack.
    const calls = herdr.calls().filter((call) => call.argv[0] !== "pane" || !["read", "send-text", "send-keys"].includes(call.argv[1] ?? ""));
    const createAt = calls.findIndex((call) => command(call) === "worktree create" && !call.argv.includes("--help"));
    const polls = calls.map((call, i) => ({ call, i })).filter(({ call }) => command(call) === "pane process-info" && call.argv.includes(paneId ?? ""));
    const runAt = calls.findIndex((call) => command(call) === "pane run" && call.argv[2] === paneId);
    const focusAt = calls.findIndex((call) => command(call) === "workspace focus" && call.argv[2] === workspaceId);
    expect(createAt).toBeGreaterThanOrEqual(0);
    expect(polls.length).toBeGreaterThanOrEqual(3);
    expect(polls[0]?.i).toBeGreaterThan(createAt);
    expect(polls.filter(({ i }) => i < runAt).length).toBeGreaterThanOrEqual(3);
    expect(runAt).toBeGreaterThan(createAt);
    expect(focusAt).toBeGreaterThan(runAt);
    const focusCall = calls[focusAt];
    expect(Date.parse(focusCall?.at ?? "")).toBeGreaterThanOrEqual(ackAt);
    expect(calls[createAt]?.argv).toEqual(expect.arrayContaining(["--cwd", repo.root, "--branch", "feat/e2e", "--base", baseSha, "--path", worktree, "--no-focus"]));
    expect(calls[runAt]?.argv[3]).toBe(manifest.child.command);
    // Never --json on a pane or workspace command (it is an unknown option there).
    expect(calls.filter((call) => ["pane", "workspace"].includes(call.argv[0] ?? "") && call.argv.includes("--json"))).toEqual([]);

    // The child answers a prompt typed into its pane through Herdr, and loaded this extension once.
    const childPane = paneId ?? "";
    await waitForScreen(herdrPane(herdr, childPane), PI_READY, "the child TUI");
    expect((await herdr.read(childPane)).match(/pi-extension/g)).toHaveLength(1);
    await submitLine(herdrPane(herdr, childPane), "ping from the test", /faux reply to: ping from the test/);
    await waitFor(() => readFileSync(childFile, "utf8").includes("faux reply to: ping from the test"), {
      timeoutMs: 30_000,
      description: "the child's answer",
    });
    const answers = entriesOnly(readEntries(childFile)).filter(
      (e) => e.type === "message" && e.message.role === "assistant" && Date.parse(e.timestamp) > Date.parse(manifest.createdAt),
    );
    expect(answers.map((e) => (e.type === "message" ? textOf(e.message) : ""))).toEqual(["faux reply to: ping from the test"]);
  });

  describe("print mode inside a Herdr pane", () => {
    let parentFile: string;
    let store: ManifestStore;

    beforeAll(() => {
      parentFile = join(sandbox.dir, "print-sessions", "parent.jsonl");
      runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "--session", parentFile, "print question"]);
      store = ManifestStore.forAgentDir(sandbox.agentDir);
    });

    async function handoff(args: string, env: Record<string, string>): Promise<{ status: number; stderr: string }> {
      const run = spawnSync(NODE_BIN, [PI_CLI, "-p", "--session", parentFile, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY, `/handoff-worktree ${args}`], {
        cwd: repo.root,
        env: { ...(await herdr.paneEnv(parentPane)), PI_HANDOFF_CONFIRM_TIMEOUT_MS: "20000", ...env },
        encoding: "utf8",
        timeout: 120_000,
        stdio: ["ignore", "pipe", "pipe"],
      });
      return { status: run.status ?? -1, stderr: run.stderr };
    }

    it("refuses in one sentence, before writing anything, when Herdr's server is not running", async () => {
      const socket = join(sandbox.dir, "stopped-herdr", "herdr.sock");
      const before = (await store.list()).map((e) => e.id);
      const branchesBefore = repo.run(["branch", "--list", "--format=%(refname)"]);
      const run = await handoff("feat/no-server", { HERDR_SOCKET_PATH: socket });
      expect(run.status).toBe(1);
      expect(run.stderr.trim().split("\n").at(-1)).toBe(
        `Herdr's server is not running at ${socket}; start Herdr (or hand off with --mux tmux from a tmux pane), then try again.`,
      );
      expect((await store.list()).map((e) => e.id)).toEqual(before);
      expect(repo.run(["branch", "--list", "--format=%(refname)"])).toBe(branchesBefore);
    });

    it("a checkout Herdr made without a workspace is retained and recorded, and the failure is one sentence", async () => {
      herdr.setFaults({ "worktree create": { error: "worktree_open_failed", message: "pty spawn failed" } });
      try {
        const before = (await store.list()).map((e) => e.id);
        const parentHash = sha256OfFile(parentFile);
        const run = await handoff("fault/herdr-open", {});
        expect(run.status).toBe(1);
        const added = (await store.list()).filter((e) => !before.includes(e.id));
        expect(added).toHaveLength(1);
        const entry = added[0];
        if (entry === undefined || !entry.ok) throw new Error("the new manifest did not decode");
        const manifest = entry.manifest;
        const worktree = join(repo.dir, "repo.worktrees", "fault-herdr-open");
        expect(manifest.state).toBe("failed");
        expect(manifest.error?.step).toBe("worktree");
        expect(manifest.history.map((h) => h.state)).toEqual(["provisioning", "failed"]);
        expect(manifest.worktree.path).toBe(worktree);
        expect(manifest.mux).toEqual({ kind: "herdr", socketPath: herdr.socketPath });
        expect(repo.run(["rev-parse", "--abbrev-ref", "HEAD"], { cwd: worktree })).toBe("fault/herdr-open");
        const sentence = `Herdr created the worktree at ${worktree} but could not open a workspace for it (pty spawn failed).`;
        expect(manifest.error?.message).toBe(sentence);
        expect(run.stderr).toContain(`The handoff failed at the worktree step: ${sentence}`);
        expect(run.stderr).toContain(`Kept (nothing was deleted): worktree ${worktree} on branch fault/herdr-open`);
        expect(run.stderr).toContain(`Manifest: handoff ${manifest.id}.`);
        // No session was forked, so nothing to relaunch: inspect, or remove.
        expect(run.stderr).toContain(
          `Next: see what exists with /handoffs here, or pi-handoff inspect ${manifest.id} in a shell; pi-handoff remove ${manifest.id} cleans up (keeps the branch, refuses uncommitted work).`,
        );
        expect(sha256OfFile(parentFile)).toBe(parentHash);
      } finally {
        herdr.clearFaults();
      }
    });
  });
});
