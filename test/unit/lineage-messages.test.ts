/**
 * The adoption messages and the ledger: bounded content whatever the number of runs, exact
 * sections, decodable details, and the selection rules (ledger, handoff notices only with work).
 */
import { describe, expect, it } from "vitest";
import { LINEAGE_LEDGER_TYPE, ledgerEntryFor, readLedger } from "../../src/adoption/ledger.ts";
import {
  buildActiveReminder,
  buildCompletionMessage,
  buildResumeMessage,
  LINEAGE_MESSAGE_TYPE,
  LineageMessageDetailsSchema,
  MAX_MESSAGE_CHARS,
  summarizeDetails,
} from "../../src/adoption/messages.ts";
import { newlyEnded, selectForResume, selectWatched } from "../../src/adoption/scan.ts";
import { cleanText } from "../../src/adoption/text.ts";
import { deliveryKey, type AdoptedRun } from "../../src/adoption/types.ts";

function run(runId: string, outcome: AdoptedRun["outcome"], extra: Partial<AdoptedRun> = {}): AdoptedRun {
  return {
    source: "pi-subagents",
    runId,
    outcome,
    state: outcome === "finished" ? "complete" : outcome === "active" ? "running" : "running",
    title: `single: agent-${runId}`,
    owner: { key: "/s/parent.jsonl", depth: 1 },
    paths: {
      runDir: `/r/${runId}`,
      status: `/r/${runId}/status.json`,
      outputs: [`/r/${runId}/output-0.log`],
      sessionFiles: [],
    },
    inspect: [`subagent({ action: "status", id: "${runId}" })`, `read /r/${runId}/status.json`],
    ...extra,
  };
}

const handoff = (runId: string, own: boolean): AdoptedRun => ({
  source: "handoff",
  runId,
  outcome: "notice",
  state: own ? "this session" : "earlier handoff",
  title: `worktree /wt/${runId} on branch ${runId} (from main at abc)`,
  progress: "handed off from /s/parent.jsonl",
  owner: { key: "/s/parent.jsonl", depth: 1 },
  paths: { outputs: [], sessionFiles: [] },
  inspect: [],
});

describe("the resume message", () => {
  it("lists runs by outcome, with the handoff first and workflow children under their workflow", () => {
    const message = buildResumeMessage([
      handoff("h1", true),
      run("a1", "active", { progress: "step 2/3", startedAt: Date.parse("2026-01-02T03:04:05Z") }),
      run("wf", "interrupted", { title: "workflow: impl, tests", progress: "its process (pid 42) is gone" }),
      run("wf-c1", "active", { parentRunId: "wf" }),
      run("f1", "finished", {
        success: true,
        summary: "all good",
        paths: { outputs: [], sessionFiles: [], result: "/res/f1.json" },
      }),
      {
        ...run("w1", "notice"),
        source: "pi-workflows",
        state: "running",
        title: 'workflow "deploy"',
        progress: "bound to its origin session; to continue it, reopen its session: pi --session /s/p.jsonl",
      },
    ]);
    expect(message.customType).toBe(LINEAGE_MESSAGE_TYPE);
    expect(message.content).toBe(
      [
        "# Background work adopted from earlier sessions",
        "",
        "This session continues from earlier sessions. Background work that they started, and that this conversation has not been told about, is listed below; this session has adopted it, and results of runs still running will be delivered here when they finish. Nothing here needs action unless the user asks for it.",
        "Use the adopted_runs tool to list or inspect these runs and find their output.",
        "",
        "This session is a handoff: worktree /wt/h1 on branch h1 (from main at abc), handed off from /s/parent.jsonl.",
        "",
        "## Still running (1)",
        "- [pi-subagents] a1: single: agent-a1 (running; step 2/3; started 2026-01-02T03:04:05Z)",
        "  started by the parent session /s/parent.jsonl",
        "  output: /r/a1/output-0.log",
        '  inspect: subagent({ action: "status", id: "a1" }); or read /r/a1/status.json',
        "",
        "## Interrupted (the process that ran it is gone; no result) (1)",
        "- [pi-subagents] wf: workflow: impl, tests (its process (pid 42) is gone)",
        "  started by the parent session /s/parent.jsonl",
        "  output: /r/wf/output-0.log",
        '  inspect: subagent({ action: "status", id: "wf" }); or read /r/wf/status.json',
        "    - active: [pi-subagents] wf-c1: single: agent-wf-c1 (running)",
        "      started by the parent session /s/parent.jsonl",
        "      output: /r/wf-c1/output-0.log",
        '      inspect: subagent({ action: "status", id: "wf-c1" }); or read /r/wf-c1/status.json',
        "",
        "## Finished, result not delivered to this conversation before (1)",
        "- [pi-subagents] f1: single: agent-f1 (complete)",
        "  started by the parent session /s/parent.jsonl",
        "  summary: all good",
        "  result: /res/f1.json",
        '  inspect: subagent({ action: "status", id: "f1" }); or read /r/f1/status.json',
        "",
        "## pi-workflows runs bound to earlier sessions (1)",
        '- [pi-workflows] w1: workflow "deploy" (bound to its origin session; to continue it, reopen its session: pi --session /s/p.jsonl)',
        "  started by the parent session /s/parent.jsonl",
        "  output: /r/w1/output-0.log",
        '  inspect: subagent({ action: "status", id: "w1" }); or read /r/w1/status.json',
      ].join("\n"),
    );
    const details = LineageMessageDetailsSchema.parse(message.details);
    expect(details.kind).toBe("resume");
    expect(details.omitted).toBe(0);
    expect(details.runs.map((r) => `${r.runId}/${r.outcome}`)).toEqual([
      "h1/notice",
      "a1/active",
      "wf/interrupted",
      "wf-c1/active",
      "f1/finished",
      "w1/notice",
    ]);
    expect(summarizeDetails(details)).toBe(
      "Adopted background work from earlier sessions: 2 running · 1 interrupted · 1 finished · 1 workflow notice",
    );
  });

  it("stays within its bound for any number of runs and says how many were left out", () => {
    const many = Array.from({ length: 500 }, (_, i) =>
      run(`run-${i}`, i % 2 === 0 ? "active" : "finished", { summary: "x".repeat(600) }),
    );
    const message = buildResumeMessage(many);
    expect(message.content.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    const shown = (message.content.match(/^- \[pi-subagents\] run-\d+:/gm) ?? []).length;
    expect(shown).toBeGreaterThan(5);
    expect(message.details.omitted).toBe(500 - shown);
    expect(
      message.content.endsWith(
        `[${500 - shown} more entries did not fit in this message; adopted_runs lists them all.]`,
      ),
    ).toBe(true);
    expect(message.details.runs).toHaveLength(200);
  });
});

describe("completion and reminder messages", () => {
  it("say which run finished or was interrupted", () => {
    const done = buildCompletionMessage(run("c1", "finished", { success: false, state: "failed", error: "boom" }));
    expect(done.content.split("\n").slice(0, 5)).toEqual([
      "# Adopted background run finished: c1",
      "",
      "A run started by an earlier session finished. It was adopted by this session; nothing here needs action unless the user asks for it.",
      "",
      "- [pi-subagents] c1: single: agent-c1 (failed (not successful))",
    ]);
    expect(done.content).toContain("  error: boom");
    expect(summarizeDetails(done.details)).toBe("Adopted run finished: single: agent-c1 (failed)");
    const gone = buildCompletionMessage(run("c2", "interrupted", { progress: "its process (pid 7) is gone" }));
    expect(gone.content.split("\n")[0]).toBe("# Adopted background run was interrupted: c2");
    expect(summarizeDetails(gone.details)).toBe("Adopted run interrupted: single: agent-c2 (running)");
    const reminder = buildActiveReminder([run("a", "active"), run("b", "active")]);
    expect(reminder.details).toEqual({
      kind: "active-reminder",
      omitted: 0,
      runs: [
        { source: "pi-subagents", runId: "a", outcome: "active", state: "running", title: "single: agent-a" },
        { source: "pi-subagents", runId: "b", outcome: "active", state: "running", title: "single: agent-b" },
      ],
    });
  });

  it("clean text from other extensions' files: no escapes, no secrets, bounded", () => {
    expect(cleanText("\u001b[31mred\u001b[0m token=sk-proj-abcdefghijklmnopqrstuvwxyz0123 done", 200)).toBe(
      "red token=[REDACTED:openai-key] done",
    );
    expect(cleanText("a".repeat(50), 10)).toBe(`${"a".repeat(10)}… [40 more characters]`);
  });
});

describe("the ledger and the selection rules", () => {
  it("reads back every delivered triple, ignoring other and malformed entries", () => {
    const entry = ledgerEntryFor(
      [run("a", "active"), run("b", "finished")],
      "resume",
      new Date("2026-01-01T00:00:00Z"),
    );
    expect(entry).toEqual({
      version: 1,
      kind: "resume",
      at: "2026-01-01T00:00:00.000Z",
      delivered: [
        { source: "pi-subagents", runId: "a", outcome: "active" },
        { source: "pi-subagents", runId: "b", outcome: "finished" },
      ],
    });
    const ledger = readLedger([
      { type: "custom", customType: LINEAGE_LEDGER_TYPE, data: entry },
      { type: "custom", customType: LINEAGE_LEDGER_TYPE, data: { version: 2, delivered: "nope" } },
      { type: "custom", customType: "something-else", data: entry },
      { type: "custom_message", customType: LINEAGE_LEDGER_TYPE, details: entry },
    ]);
    expect([...ledger]).toEqual([deliveryKey(run("a", "active")), deliveryKey(run("b", "finished"))]);
  });

  it("chooses what is new, speaks of handoffs only alongside work, and watches what runs", () => {
    const runs = [handoff("h", true), run("a", "active"), run("f", "finished"), run("i", "interrupted")];
    const ledger = new Set([deliveryKey(run("a", "active"))]);
    expect(selectForResume(runs, ledger).map((r) => r.runId)).toEqual(["h", "f", "i"]);
    expect(selectForResume([handoff("h", true), run("a", "active")], ledger)).toEqual([]);
    expect(selectWatched(runs).map((r) => r.runId)).toEqual(["a"]);
    expect(
      newlyEnded(
        [run("a", "finished"), run("b", "active"), run("c", "interrupted")],
        new Set([deliveryKey(run("c", "interrupted"))]),
      ).map((r) => r.runId),
    ).toEqual(["a"]);
  });
});
