/**
 * The other lineage sources on real files: pi-workflows run bundles bound to ancestors (by session
 * id or file) and the handoff chain from real handoff messages; then the Pi adapter end to end with
 * a recording host (real session files, real pi-subagents files): the resume message, its ledger
 * entry, and the `adopted_runs` tool's list and inspect.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { registerLineage } from "../../pi-extension/lineage.ts";
import { LINEAGE_LEDGER_TYPE } from "../../src/adoption/ledger.ts";
import { walkLineage } from "../../src/adoption/ancestry.ts";
import { LINEAGE_MESSAGE_TYPE, type LineageMessage } from "../../src/adoption/messages.ts";
import { handoffChainSource } from "../../src/adoption/sources/handoff-chain.ts";
import { piSubagentsSource } from "../../src/adoption/sources/pi-subagents.ts";
import { piWorkflowsSource, workflowRunsDir } from "../../src/adoption/sources/pi-workflows.ts";
import type { LineageEntryView, ScanContext } from "../../src/adoption/types.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { createRootSession, forkSession, ProcessPool, type SessionLink } from "../support/lineage.ts";
import { loadPiSubagentsWriters, PiSubagentsFixture } from "../support/pi-subagents-fixtures.ts";
import { waitFor } from "../support/tmux.ts";

function writeBundle(
  agentDir: string,
  dir: string,
  files: { binding?: unknown; manifest?: unknown; state?: unknown; rawBinding?: string },
): void {
  const root = join(workflowRunsDir(agentDir), dir);
  mkdirSync(join(root, "session"), { recursive: true });
  if (files.binding !== undefined) writeFileSync(join(root, "session", "binding.json"), JSON.stringify(files.binding));
  if (files.rawBinding !== undefined) writeFileSync(join(root, "session", "binding.json"), files.rawBinding);
  if (files.manifest !== undefined) writeFileSync(join(root, "manifest.json"), JSON.stringify(files.manifest));
  if (files.state !== undefined) writeFileSync(join(root, "state.json"), JSON.stringify(files.state));
}

function handoffEntry(id: string, branch: string, parentSessionFile: string): LineageEntryView {
  const message = buildHandoffMessage({
    handoffId: id,
    manifestPath: `/agent/handoff-worktree/manifests/${id}.json`,
    branch,
    baseRef: "main",
    baseSha: "b".repeat(40),
    worktreePath: `/wt/${branch}`,
    mainCheckout: "/repo",
    parentSessionFile,
  });
  return { type: "custom_message", customType: message.customType, details: message.details };
}

describe("pi-workflows bundles and the handoff chain", () => {
  let dir: string;
  let agentDir: string;
  let grandparent: SessionLink;
  let parent: SessionLink;
  let context: ScanContext;

  beforeAll(() => {
    dir = makeTempDir("phw-lineage-src-");
    agentDir = join(dir, "agent");
    grandparent = createRootSession(dir, join(dir, "repo"));
    parent = forkSession(grandparent, dir, join(dir, "wt1"), "parent");
    const lineage = walkLineage({
      sessionId: "child-id",
      parentSession: parent.file,
      timestamp: new Date().toISOString(),
    });
    writeBundle(agentDir, "run-by-id", {
      binding: { runId: "wf-1", piSessionId: grandparent.id, piSessionFile: "/moved/elsewhere.jsonl", cwd: "/repo" },
      manifest: { runId: "wf-1", workflowName: "release", status: "running" },
      state: { status: "waiting", extra: { anything: true } },
    });
    writeBundle(agentDir, "run-by-file", {
      binding: { runId: "wf-2", piSessionFile: parent.file },
      manifest: { runId: "wf-2", workflowName: "cleanup" },
      state: { status: "completed" },
    });
    writeBundle(agentDir, "run-of-stranger", {
      binding: { runId: "wf-3", piSessionId: "someone-else" },
      state: { status: "running" },
    });
    writeBundle(agentDir, "run-broken", { rawBinding: "{{" });
    writeBundle(agentDir, "run-no-binding", { state: { status: "running" } });
    context = {
      lineage,
      branch: [
        { type: "message" },
        handoffEntry("20260101-000000-first-aaaa", "first", grandparent.file),
        { type: "custom_message", customType: "handoff-worktree", details: { garbage: true } },
        handoffEntry("20260101-000100-second-bbbb", "second", parent.file),
      ],
      env: {},
      agentDir,
      now: Date.now(),
    };
  });

  afterAll(() => {
    if (dir !== undefined) removeTempDir(dir);
  });

  it("gives one notice per bundle bound to an ancestor, with how to continue it", async () => {
    const scan = await piWorkflowsSource().scan(context);
    const byId = Object.fromEntries(scan.runs.map((run) => [run.runId, run]));
    expect(Object.keys(byId).sort()).toEqual(["wf-1", "wf-2"]);
    expect(byId["wf-1"]).toMatchObject({
      outcome: "notice",
      state: "waiting",
      title: 'workflow "release"',
      progress: "bound to its origin session; to continue it, reopen its session: pi --session /moved/elsewhere.jsonl",
      owner: { key: grandparent.id, depth: 2 },
    });
    expect(byId["wf-2"]).toMatchObject({
      state: "completed",
      title: 'workflow "cleanup"',
      progress: "ended completed",
      owner: { key: parent.file, depth: 1 },
    });
    expect(scan.notes).toEqual([
      `pi-workflows: ${join(workflowRunsDir(agentDir), "run-broken", "session", "binding.json")} is not valid JSON; skipped.`,
    ]);
  });

  it("names every handoff on the branch, the newest as this session's own", async () => {
    const scan = await handoffChainSource().scan(context);
    expect(scan.runs.map((run) => [run.runId, run.state, run.title, run.progress])).toEqual([
      [
        "20260101-000000-first-aaaa",
        "earlier handoff",
        `worktree /wt/first on branch first (from main at ${"b".repeat(12)})`,
        `handed off from ${grandparent.file}`,
      ],
      [
        "20260101-000100-second-bbbb",
        "this session",
        `worktree /wt/second on branch second (from main at ${"b".repeat(12)})`,
        `handed off from ${parent.file}`,
      ],
    ]);
    expect(scan.notes).toEqual(["handoff: a handoff message on this branch has unreadable details; skipped."]);
  });
});

interface Recorded {
  messages: Array<{ message: LineageMessage; options: unknown }>;
  entries: Array<{ customType: string; data: unknown }>;
}

/** The parts of ExtensionAPI the lineage adapter uses, recording what it does. */
function recordingHost(): {
  pi: ExtensionAPI;
  recorded: Recorded;
  emit(event: string, ctx: ExtensionContext): Promise<void>;
  tool(): { execute: (...args: unknown[]) => Promise<unknown> };
  hasTool(): boolean;
} {
  const handlers = new Map<string, Array<(event: unknown, ctx: ExtensionContext) => Promise<void>>>();
  const recorded: Recorded = { messages: [], entries: [] };
  let tool: { execute: (...args: unknown[]) => Promise<unknown> } | undefined;
  const pi = {
    on: (event: string, handler: (event: unknown, ctx: ExtensionContext) => Promise<void>) => {
      handlers.set(event, [...(handlers.get(event) ?? []), handler]);
    },
    registerMessageRenderer: () => {},
    registerTool: (definition: { execute: (...args: unknown[]) => Promise<unknown> }) => {
      tool = definition;
    },
    sendMessage: (message: LineageMessage, options: unknown) => recorded.messages.push({ message, options }),
    appendEntry: (customType: string, data: unknown) => recorded.entries.push({ customType, data }),
  } as unknown as ExtensionAPI;
  return {
    pi,
    recorded,
    emit: async (event, ctx) => {
      for (const handler of handlers.get(event) ?? []) await handler({ type: event }, ctx);
    },
    tool: () => {
      if (tool === undefined) throw new Error("no tool registered");
      return tool;
    },
    hasTool: () => tool !== undefined,
  };
}

describe("the Pi adapter with a recording host", () => {
  let dir: string;
  let processes: ProcessPool;
  let child: SessionLink;
  let fixture: PiSubagentsFixture;
  const previousRoot = process.env.PI_SUBAGENTS_TEMP_ROOT;

  beforeAll(async () => {
    dir = makeTempDir("phw-lineage-host-");
    process.env.PI_SUBAGENTS_TEMP_ROOT = join(dir, "pi-subagents");
    processes = new ProcessPool();
    fixture = new PiSubagentsFixture(join(dir, "pi-subagents"), await loadPiSubagentsWriters());
    const parent = createRootSession(dir, join(dir, "repo"));
    fixture.startRun({ runId: "busy-1", sessionId: parent.file, agents: ["scout"], pid: processes.live() });
    mkdirSync(join(fixture.runDir("busy-1")), { recursive: true });
    writeFileSync(join(fixture.runDir("busy-1"), "output-0.log"), "line one\nline two: still working\n");
    fixture.startRun({ runId: "done-1", sessionId: parent.file, agents: ["reviewer"], pid: processes.dead() });
    fixture.finishRun("done-1", { summary: "LGTM" });
    child = forkSession(parent, dir, join(dir, "wt"), "child");
  });

  afterAll(() => {
    processes?.killAll();
    if (previousRoot === undefined) delete process.env.PI_SUBAGENTS_TEMP_ROOT;
    else process.env.PI_SUBAGENTS_TEMP_ROOT = previousRoot;
    if (dir !== undefined) removeTempDir(dir);
  });

  it("delivers the resume message with its ledger entry, without a turn, and serves adopted_runs", async () => {
    const host = recordingHost();
    registerLineage(host.pi, { sources: [piSubagentsSource()], pollMs: 60_000 });
    const manager = SessionManager.open(child.file);
    const ctx = { sessionManager: manager, isIdle: () => true, cwd: join(dir, "wt") } as unknown as ExtensionContext;
    await host.emit("session_start", ctx);
    // Nothing is read or sent during session_start itself.
    expect(host.recorded.messages).toEqual([]);
    await waitFor(() => host.recorded.messages.length > 0, { timeoutMs: 10_000, description: "the resume message" });

    expect(host.recorded.messages).toHaveLength(1);
    const sent = host.recorded.messages[0];
    expect(sent?.options).toEqual({ triggerTurn: false });
    expect(sent?.message.customType).toBe(LINEAGE_MESSAGE_TYPE);
    expect(sent?.message.details.runs.map((run) => `${run.runId}/${run.outcome}`)).toEqual([
      "done-1/finished",
      "busy-1/active",
    ]);
    expect(host.recorded.entries).toEqual([
      {
        customType: LINEAGE_LEDGER_TYPE,
        data: {
          version: 1,
          kind: "resume",
          at: expect.any(String),
          delivered: [
            { source: "pi-subagents", runId: "done-1", outcome: "finished" },
            { source: "pi-subagents", runId: "busy-1", outcome: "active" },
          ],
        },
      },
    ]);

    const list = (await host.tool().execute("call-1", { action: "list" })) as {
      content: Array<{ text: string }>;
      details: { runs: string[] };
    };
    expect(list.details.runs).toEqual([
      JSON.stringify(["pi-subagents", "busy-1", "active"]),
      JSON.stringify(["pi-subagents", "done-1", "finished"]),
    ]);
    expect(list.content[0]?.text).toContain(
      `[pi-subagents] busy-1 — active (running): single: scout\n  progress: 0/1 steps done, 1 running`,
    );
    expect(list.content[0]?.text).toContain(`  result: ${fixture.resultPath("done-1")}`);

    const inspect = (await host.tool().execute("call-2", { action: "inspect", runId: "busy" })) as {
      content: Array<{ text: string }>;
      isError?: boolean;
    };
    expect(inspect.isError).toBeUndefined();
    expect(inspect.content[0]?.text).toContain(
      `end of ${join(fixture.runDir("busy-1"), "output-0.log")}:\nline one\nline two: still working`,
    );
    const missing = (await host.tool().execute("call-3", { action: "inspect", runId: "nope" })) as {
      content: Array<{ text: string }>;
      isError?: boolean;
    };
    expect(missing.isError).toBe(true);
    expect(missing.content[0]?.text).toBe(
      'No adopted run has the id "nope". adopted_runs with action=list shows them all.',
    );

    await host.emit("session_shutdown", ctx);
  });

  it("waits for the settle when a turn is running; a session without lineage gets neither message nor tool", async () => {
    const host = recordingHost();
    registerLineage(host.pi, { sources: [piSubagentsSource()], pollMs: 60_000 });
    let idle = false;
    const ctx = {
      sessionManager: SessionManager.open(child.file),
      isIdle: () => idle,
      cwd: dir,
    } as unknown as ExtensionContext;
    await host.emit("session_start", ctx);
    expect(host.hasTool()).toBe(true);
    await host.emit("agent_start", ctx);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(host.recorded.messages).toEqual([]);
    idle = true;
    await host.emit("agent_settled", ctx);
    expect(host.recorded.messages.map((m) => m.message.details.kind)).toEqual(["resume"]);
    await host.emit("session_shutdown", ctx);

    const lone = recordingHost();
    registerLineage(lone.pi, { sources: [piSubagentsSource()], pollMs: 60_000 });
    const root = SessionManager.create(join(dir, "lone"), join(dir, "lone-sessions"));
    await lone.emit("session_start", {
      sessionManager: root,
      isIdle: () => true,
      cwd: dir,
    } as unknown as ExtensionContext);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(lone.recorded.messages).toEqual([]);
    // Without a lineage the tool is not even offered to the model.
    expect(lone.hasTool()).toBe(false);
  });
});
