/**
 * End to end: the real Pi (RPC mode, faux provider, offline) started on a handoff child whose
 * parent session owns pi-subagents runs written by the package's own writer code.
 * - The child's kickoff turn runs first; exactly one resume message follows its settle, and no
 *   turn is triggered by it.
 * - A compaction re-sends the still-running adopted runs.
 * - When an adopted run finishes later (result written by pi-subagents' writer), exactly one
 *   completion message arrives.
 * - After a restart nothing is delivered again; a run the parent finished meanwhile is.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionManager, type FileEntry } from "@earendil-works/pi-coding-agent";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { LINEAGE_LEDGER_TYPE, LedgerEntryDataSchema } from "../../src/adoption/ledger.ts";
import {
  LINEAGE_MESSAGE_TYPE,
  LineageMessageDetailsSchema,
  type LineageMessageDetails,
} from "../../src/adoption/messages.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";
import { ProcessPool } from "../support/lineage.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  onlySessionFile,
  PROJECT_ROOT,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { PiRpc } from "../support/pi-rpc.ts";
import { loadPiSubagentsWriters, PiSubagentsFixture } from "../support/pi-subagents-fixtures.ts";
import { waitFor } from "../support/tmux.ts";

function lineageMessages(entries: FileEntry[]): LineageMessageDetails[] {
  return entries.flatMap((entry) =>
    entry.type === "custom_message" && entry.customType === LINEAGE_MESSAGE_TYPE
      ? [LineageMessageDetailsSchema.parse(entry.details)]
      : [],
  );
}

function ledgerTriples(entries: FileEntry[]): string[][] {
  return entries.flatMap((entry) =>
    entry.type === "custom" && entry.customType === LINEAGE_LEDGER_TYPE
      ? [LedgerEntryDataSchema.parse(entry.data).delivered.map((t) => `${t.source}/${t.runId}/${t.outcome}`)]
      : [],
  );
}

const indexOf = (entries: FileEntry[], match: (entry: FileEntry) => boolean) => entries.findIndex(match);
const isAssistant = (entry: FileEntry) => entry.type === "message" && entry.message.role === "assistant";

describe("lineage adoption with the real Pi on a handoff child", () => {
  let sandbox: PiSandbox;
  let fixture: PiSubagentsFixture;
  let processes: ProcessPool;
  let env: Record<string, string>;
  let parentFile: string;
  let childFile: string;
  let worktree: string;
  let pi: PiRpc | undefined;
  let runnerPid: number;
  let handoffId: string;

  const startChild = () =>
    PiRpc.start(["--session", childFile, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY], {
      cwd: worktree,
      env,
    });

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-lineage-e2e-");
    // Keep almost nothing on compaction, so this small conversation can be compacted at all.
    writeFileSync(join(sandbox.agentDir, "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 10 } }));
    // The kickoff turn takes two seconds, so the scan ends while it runs: delivery must wait for the settle.
    copyFileSync(
      join(PROJECT_ROOT, "test", "support", "fixtures", "slow-kickoff.ts"),
      join(sandbox.agentDir, "extensions", "slow-kickoff.ts"),
    );
    processes = new ProcessPool();
    const root = join(sandbox.dir, "pi-subagents");
    env = { ...sandbox.env, PI_SUBAGENTS_TEMP_ROOT: root, PI_HANDOFF_LINEAGE_POLL_MS: "300" };
    process.env.PI_SUBAGENTS_TEMP_ROOT = root;
    fixture = new PiSubagentsFixture(root, await loadPiSubagentsWriters());

    // A real parent conversation, written by the real Pi.
    const parentCwd = join(sandbox.dir, "repo");
    worktree = join(sandbox.dir, "repo.worktrees", "feat-lineage");
    mkdirSync(parentCwd, { recursive: true });
    mkdirSync(worktree, { recursive: true });
    runPiPrint(sandbox, parentCwd, ["--model", FAUX_MODEL, "first question"]);
    parentFile = onlySessionFile(sandbox, parentCwd);

    // Background work the parent started: one still running, one finished and never delivered,
    // and another session's run that must stay invisible.
    runnerPid = processes.live();
    fixture.startRun({
      runId: "run-active",
      sessionId: parentFile,
      agents: ["scout", "worker"],
      mode: "chain",
      pid: runnerPid,
    });
    fixture.startRun({ runId: "run-finished", sessionId: parentFile, agents: ["reviewer"], pid: processes.dead() });
    fixture.finishRun("run-finished", { summary: "Review: two nits, otherwise fine." });
    fixture.startRun({ runId: "run-other", sessionId: join(sandbox.dir, "elsewhere.jsonl"), pid: processes.dead() });
    fixture.finishRun("run-other");

    // The child, as the handoff makes it: the parent's active path plus one handoff message with a task.
    const store = ManifestStore.forAgentDir(sandbox.agentDir);
    handoffId = store.newId("feat/lineage");
    const parentManager = SessionManager.open(parentFile);
    const leafId = parentManager.getLeafId() ?? "";
    const childManager = SessionManager.open(parentFile, join(sandbox.dir, "child-sessions"), worktree);
    const created = childManager.createBranchedSession(leafId);
    if (created === undefined) throw new Error("no child session");
    childFile = created;
    const message = buildHandoffMessage({
      handoffId,
      manifestPath: store.pathFor(handoffId),
      branch: "feat/lineage",
      baseRef: "main",
      baseSha: "a".repeat(40),
      worktreePath: worktree,
      mainCheckout: parentCwd,
      parentSessionFile: parentFile,
      task: "summarise the README",
    });
    childManager.appendCustomMessageEntry(message.customType, message.content, true, message.details);

    // Its manifest, launching: the child acknowledges it and then starts on the task (the kickoff turn).
    const now = new Date();
    const manifest = newManifest({
      id: handoffId,
      now,
      branch: "feat/lineage",
      base: { ref: "main", sha: "a".repeat(40) },
      repo: { root: parentCwd, commonDir: join(parentCwd, ".git") },
      parent: { sessionFile: parentFile, sessionId: parentManager.getSessionId(), leafId, cwd: parentCwd },
      worktree: { path: worktree },
      mux: { kind: "tmux" },
      task: "summarise the README",
    });
    manifest.state = "launching";
    manifest.history.push({ state: "launching", at: now.toISOString() });
    manifest.child = { sessionFile: childFile };
    const createdManifest = await store.create(manifest);
    if (!createdManifest.ok) throw new Error(`manifest not created: ${JSON.stringify(createdManifest)}`);
  });

  afterAll(async () => {
    await pi?.stop();
    processes?.killAll();
    delete process.env.PI_SUBAGENTS_TEMP_ROOT;
    sandbox?.cleanup();
  });

  it("delivers one resume message after the kickoff turn settles, without a turn of its own", async () => {
    pi = startChild();
    await pi.waitFor((r) => r.type === "agent_settled", "the kickoff turn to settle", 60_000);
    const entries = await waitFor(
      () => {
        const all = readEntries(childFile);
        return lineageMessages(all).length > 0 ? all : undefined;
      },
      { timeoutMs: 20_000, description: "the resume message" },
    );

    const messages = lineageMessages(entries);
    expect(messages).toHaveLength(1);
    const resume = messages[0];
    expect(resume?.kind).toBe("resume");
    expect(resume?.runs.map((run) => `${run.source}/${run.runId}/${run.outcome}`)).toEqual([
      `handoff/${handoffId}/notice`,
      "pi-subagents/run-finished/finished",
      "pi-subagents/run-active/active",
    ]);

    // Order on disk: handoff message, kickoff, the kickoff's answer, then the resume message and its ledger entry.
    const kickoff = indexOf(entries, (e) => e.type === "custom_message" && e.customType === "handoff-worktree-kickoff");
    const answer = entries.findIndex((e, i) => i > kickoff && isAssistant(e));
    const resumeAt = indexOf(entries, (e) => e.type === "custom_message" && e.customType === LINEAGE_MESSAGE_TYPE);
    expect(kickoff).toBeGreaterThan(0);
    expect(answer).toBeGreaterThan(kickoff);
    expect(resumeAt).toBeGreaterThan(answer);
    expect(entries[resumeAt + 1]).toMatchObject({ type: "custom", customType: LINEAGE_LEDGER_TYPE });
    const content = entries[resumeAt]?.type === "custom_message" ? String(entries[resumeAt].content) : "";
    expect(content).toContain("Review: two nits, otherwise fine.");
    expect(content).toContain(`This session is a handoff: worktree ${worktree} on branch feat/lineage`);
    expect(content).not.toContain("run-other");

    // No turn was triggered by the message: nothing after it is an assistant reply.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(readEntries(childFile).slice(resumeAt).filter(isAssistant)).toHaveLength(0);
  });

  it("re-sends the still-running adopted runs after a compaction", async () => {
    if (pi === undefined) throw new Error("no Pi");
    const response = await pi.command({ type: "compact" }, 60_000);
    expect(response.success, JSON.stringify(response)).toBe(true);
    const entries = await waitFor(
      () => {
        const all = readEntries(childFile);
        return lineageMessages(all).some((m) => m.kind === "active-reminder") ? all : undefined;
      },
      { timeoutMs: 20_000, description: "the reminder after compaction" },
    );
    const reminders = lineageMessages(entries).filter((m) => m.kind === "active-reminder");
    expect(reminders).toHaveLength(1);
    expect(reminders[0]?.runs.map((run) => run.runId)).toEqual(["run-active"]);
    // A reminder repeats known facts: it adds nothing to the ledger.
    expect(ledgerTriples(entries)).toHaveLength(1);
  });

  it("delivers exactly one completion message when an adopted run finishes", async () => {
    fixture.finishRun("run-active", { summary: "Chain done: patch ready." });
    // The message and then its ledger entry: two appends, so wait for both.
    const entries = await waitFor(
      () => {
        const all = readEntries(childFile);
        const delivered =
          lineageMessages(all).some((m) => m.kind === "completion") &&
          ledgerTriples(all).at(-1)?.[0] === "pi-subagents/run-active/finished";
        return delivered ? all : undefined;
      },
      { timeoutMs: 20_000, description: "the completion message and its ledger entry" },
    );
    // Several more poll rounds: still exactly one.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = readEntries(childFile);
    const completions = lineageMessages(after).filter((m) => m.kind === "completion");
    expect(completions).toHaveLength(1);
    expect(completions[0]?.runs).toEqual([
      {
        source: "pi-subagents",
        runId: "run-active",
        outcome: "finished",
        state: "complete",
        title: "chain: scout → worker",
      },
    ]);
    expect(ledgerTriples(after).at(-1)).toEqual(["pi-subagents/run-active/finished"]);
    expect(after.length).toBe(entries.length);
  });

  it("delivers nothing again after a restart, and only what is new", async () => {
    await pi?.stop();
    const before = readEntries(childFile);
    const countBefore = lineageMessages(before).length;

    pi = startChild();
    await pi.command({ type: "get_state" });
    // Past the scan and a few polls, then a prompt so there is a settle to deliver after.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const settledFrom = pi.records.length;
    await pi.command({ type: "prompt", message: "anything new?" });
    await pi.waitFor((r) => r.type === "agent_settled", "the prompt to settle", 60_000, settledFrom);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const afterRestart = readEntries(childFile);
    expect(lineageMessages(afterRestart)).toHaveLength(countBefore);
    expect(ledgerTriples(afterRestart)).toEqual(ledgerTriples(before));
    // The kickoff is not sent again either.
    expect(
      afterRestart.filter((e) => e.type === "custom_message" && e.customType === "handoff-worktree-kickoff"),
    ).toHaveLength(1);
    await pi.stop();

    // The parent finishes another run while the child is closed: the next start says only that.
    fixture.startRun({ runId: "run-late", sessionId: parentFile, agents: ["fixer"], pid: processes.dead() });
    fixture.finishRun("run-late", { summary: "fixed the flaky test" });
    pi = startChild();
    const entries = await waitFor(
      () => {
        const all = readEntries(childFile);
        return lineageMessages(all).length > countBefore ? all : undefined;
      },
      { timeoutMs: 20_000, description: "the resume message for the new run" },
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const fresh = lineageMessages(readEntries(childFile)).slice(countBefore);
    expect(fresh.map((m) => [m.kind, m.runs.map((run) => `${run.runId}/${run.outcome}`)])).toEqual([
      ["resume", ["run-late/finished"]],
    ]);
    expect(entries.length).toBeGreaterThan(afterRestart.length);
  });
});
