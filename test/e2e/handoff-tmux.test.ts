/**
 * End to end: the real Pi (faux provider, offline) in a real tmux server hands a real
 * conversation off to a real child Pi in a new window.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSessionContext } from "@earendil-works/pi-coding-agent";
import { ManifestSchema, type Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { createPiSandbox, piTuiCommand, readEntries, runPiPrint, FAUX_MODEL, type PiSandbox } from "../support/pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";
import {
  buildParentWithAbandonedBranch,
  entriesOnly,
  HANDOFF_STARTED,
  PI_READY,
  sha256OfFile,
  submitLine,
  textOf,
  tmuxPane,
  waitForScreen,
} from "../support/tui.ts";

describe("/handoff-worktree on tmux with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;
  let baseSha: string;

  beforeAll(async () => {
    sandbox = createPiSandbox();
    repo = createTempRepo({ extraCommits: 2 });
    repo.run(["tag", "v1", "HEAD~1"]);
    baseSha = repo.run(["rev-parse", "v1"]).trim();
    tmux = await startPrivateTmux({ env: sandbox.env });
  });

  afterAll(async () => {
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("forks the active branch into a worktree, starts the child, confirms, then focuses", async () => {
    const parent = buildParentWithAbandonedBranch(sandbox, repo);
    const parentPane = tmux.firstPaneId;
    await tmux.tmux(["send-keys", "-t", parentPane, "-l", piTuiCommand(repo.root, ["--session", parent.file])]);
    await tmux.tmux(["send-keys", "-t", parentPane, "Enter"]);
    await waitForScreen(tmuxPane(tmux, parentPane), PI_READY, "the parent TUI");

    // A live turn in the TUI, so the handoff starts from a leaf that exists only in this process's memory too.
    await submitLine(tmuxPane(tmux, parentPane), "live question", /faux reply to: live question/);
    const parentLeaf = await waitFor(() => {
      const entries = entriesOnly(readEntries(parent.file));
      const last = entries.at(-1);
      return last?.type === "message" && textOf(last.message) === "faux reply to: live question" ? last.id : undefined;
    }, { timeoutMs: 10_000, description: "the live turn on disk" });
    const parentHashBefore = sha256OfFile(parent.file);

    await submitLine(tmuxPane(tmux, parentPane), "/handoff-worktree feat/e2e v1", HANDOFF_STARTED);
    const screen = await waitForScreen(tmuxPane(tmux, parentPane), /Handed off to branch feat\/e2e|failed|did not confirm/, "the handoff's final notice", 90_000);
    expect(screen).toContain("Handed off to branch feat/e2e (from v1 at " + baseSha.slice(0, 12) + ")");
    expect(screen).toMatch(/Worktree: \S+feat-e2e/);
    expect(screen).toMatch(/Child session: \S+\.jsonl/);
    expect(screen).toMatch(/Window: tmux window @\d+ \(pane %\d+\), Pi pid \d+/);

    // The manifest: every step, in transaction order.
    const store = ManifestStore.forAgentDir(sandbox.agentDir);
    const listed = await store.list();
    expect(listed).toHaveLength(1);
    const entry = listed[0];
    if (entry === undefined || !entry.ok) throw new Error("manifest did not decode");
    const manifest: Manifest = ManifestSchema.parse(JSON.parse(readFileSync(entry.path, "utf8")));
    expect(manifest.history.map((h) => h.state)).toEqual(["provisioning", "provisioned", "forked", "launching", "running"]);
    expect(manifest.state).toBe("running");
    expect(manifest.branch).toBe("feat/e2e");
    expect(manifest.base).toEqual({ ref: "v1", sha: baseSha });
    expect(manifest.parent).toMatchObject({ sessionFile: parent.file, leafId: parentLeaf, cwd: repo.root });
    expect(manifest.child.confirmedBy).toBe("ack");
    // The notice ends with what to do next, with this handoff's own ids.
    if (manifest.mux.kind !== "tmux") throw new Error(`expected a tmux location, got ${manifest.mux.kind}`);
    expect(screen).toContain(
      `Next: you are in its window now; come back with tmux select-window -t ${parentPane}, return with tmux select-window -t ${manifest.mux.windowId}.`,
    );
    expect(screen).toContain(`Later: /handoffs here, or pi-handoff inspect ${manifest.id} in a shell (relaunch its Pi, switch to it, remove it).`);

    // The worktree: on the new branch, at the base commit, outside the main checkout.
    const worktree = manifest.worktree.path;
    expect(worktree.startsWith(repo.root + "/")).toBe(false);
    expect(repo.run(["rev-parse", "HEAD"], { cwd: worktree }).trim()).toBe(baseSha);
    expect(repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: worktree }).trim()).toBe("feat/e2e");

    // The child session: header, active branch only, plus exactly one handoff message.
    const childFile = manifest.child.sessionFile ?? "";
    const childEntries = readEntries(childFile);
    const header = childEntries[0] as { type: string; cwd: string; parentSession?: string };
    expect(header).toMatchObject({ type: "session", cwd: worktree, parentSession: parent.file });
    const childIds = new Set(entriesOnly(childEntries).map((e) => e.id));
    for (const id of parent.abandonedIds) expect(childIds.has(id)).toBe(false);
    const handoffEntries = entriesOnly(childEntries).filter((e) => e.type === "custom_message" && e.customType === "handoff-worktree");
    expect(handoffEntries).toHaveLength(1);
    const handoffEntry = handoffEntries[0];
    if (handoffEntry === undefined || handoffEntry.type !== "custom_message") throw new Error("no handoff entry");
    expect(handoffEntry.parentId).toBe(parentLeaf);
    expect(handoffEntry.content).toContain("feat/e2e");
    expect(handoffEntry.content).toContain(baseSha);

    // The model sees the parent's context at its leaf plus the one handoff message.
    const parentContext = buildSessionContext(entriesOnly(readEntries(parent.file)), parentLeaf);
    const childContext = buildSessionContext(entriesOnly(childEntries), handoffEntry.id);
    expect(childContext.messages.slice(0, -1)).toEqual(parentContext.messages);
    expect(childContext.messages).toHaveLength(parentContext.messages.length + 1);
    expect(childContext.messages.at(-1)).toMatchObject({ role: "custom", customType: "handoff-worktree" });

    // The parent file was never written.
    expect(sha256OfFile(parent.file)).toBe(parentHashBefore);

    // The child Pi is alive, in the worktree, marked with the handoff id.
    const pid = manifest.child.pid ?? 0;
    expect(existsSync(`/proc/${pid}`)).toBe(true);
    expect(realpathSync(readlinkSync(`/proc/${pid}/cwd`))).toBe(worktree);
    expect(readFileSync(`/proc/${pid}/comm`, "utf8").trim()).toBe("pi");
    expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toContain(`PI_HANDOFF_ID=${manifest.id}`);

    // Focus came after the acknowledgement, and the child's window is the active one.
    expect(manifest.mux.kind).toBe("tmux");
    if (manifest.mux.kind !== "tmux") return;
    const ackAt = Date.parse(manifest.child.ackAt ?? "");
    const focus = manifest.focus;
    if (focus === undefined || "error" in focus) throw new Error(`focus not recorded: ${JSON.stringify(focus)}`);
    expect(Date.parse(focus.at)).toBeGreaterThanOrEqual(ackAt);
    const childWindow = manifest.mux.windowId ?? "";
    expect((await tmux.tmux(["display-message", "-p", "-t", childWindow, "#{window_active}"])).trim()).toBe("1");

    // The child answers a prompt typed into its pane, and loaded this extension exactly once.
    const childPane = manifest.mux.paneId ?? "";
    await waitForScreen(tmuxPane(tmux, childPane), PI_READY, "the child TUI");
    const childScreen = await tmux.capturePane(childPane);
    expect(childScreen.match(/pi-extension/g)).toHaveLength(1);
    await submitLine(tmuxPane(tmux, childPane), "ping from the test", /faux reply to: ping from the test/);
    await waitFor(() => readFileSync(childFile, "utf8").includes("faux reply to: ping from the test"), {
      timeoutMs: 30_000,
      description: "the child's answer",
    });
    // Without a task, the child did not start a turn by itself: the only answer is to our prompt.
    const answers = entriesOnly(readEntries(childFile)).filter(
      (e) => e.type === "message" && e.message.role === "assistant" && Date.parse(e.timestamp) > Date.parse(manifest.createdAt),
    );
    expect(answers.map((e) => (e.type === "message" ? textOf(e.message) : ""))).toEqual(["faux reply to: ping from the test"]);
  });

  it("waits for a busy agent, then hands off from the turn it finished", async () => {
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "--session-dir", `${sandbox.dir}/busy-sessions`, "opening question"]);
    const [file] = readdirSync(`${sandbox.dir}/busy-sessions`).map((name) => `${sandbox.dir}/busy-sessions/${name}`);
    if (file === undefined) throw new Error("no busy parent session");
    const pane = (await tmux.tmux(["new-window", "-d", "-P", "-F", "#{pane_id}", "-t", `${tmux.sessionId}:`])).trim();
    await tmux.tmux(["send-keys", "-t", pane, "-l", piTuiCommand(repo.root, ["--session", file, "--session-dir", `${sandbox.dir}/busy-sessions`])]);
    await tmux.tmux(["send-keys", "-t", pane, "Enter"]);
    await waitForScreen(tmuxPane(tmux, pane), PI_READY, "the busy parent TUI");
    // The faux model takes 3 s to answer anything that mentions "slow"; hand off while it works.
    await submitLine(tmuxPane(tmux, pane), "a slow question", /Working/);
    await submitLine(tmuxPane(tmux, pane), "/handoff-worktree feat/busy --no-focus", HANDOFF_STARTED);
    const screen = await waitForScreen(tmuxPane(tmux, pane), /Handed off to branch feat\/busy|failed|did not confirm/, "the busy handoff's notice", 90_000);
    expect(screen).toContain("Handed off to branch feat/busy");
    const manifests = (await ManifestStore.forAgentDir(sandbox.agentDir).list()).filter((e) => e.ok && e.manifest.branch === "feat/busy");
    const entry = manifests[0];
    if (entry === undefined || !entry.ok) throw new Error("no manifest for feat/busy");
    // The handoff started from the answer to the slow question: the turn finished first.
    const answer = entriesOnly(readEntries(file)).find((e) => e.type === "message" && textOf(e.message) === "faux reply to: a slow question");
    expect(answer).toBeDefined();
    expect(entry.manifest.parent.leafId).toBe(answer?.id);
    expect(Date.parse(entry.manifest.createdAt)).toBeGreaterThanOrEqual(Date.parse(answer?.timestamp ?? ""));
    // The custom session dir is kept for the child.
    expect(entry.manifest.child.sessionFile?.startsWith(`${sandbox.dir}/busy-sessions/`)).toBe(true);
    // --no-focus: the parent's window stays the active one.
    if (entry.manifest.mux.kind !== "tmux") throw new Error("expected tmux");
    expect(entry.manifest.focus).toBeUndefined();
    expect((await tmux.tmux(["display-message", "-p", "-t", entry.manifest.mux.windowId ?? "", "#{window_active}"])).trim()).toBe("0");
  });
});
