/**
 * The collapsed views of this package's messages: a few lines with what matters and how to see
 * more (the expand key, the adopted_runs tool), never the whole text.
 */
import { describe, expect, it } from "vitest";
import {
  compactHandoffText,
  compactLineageText,
  compactReportText,
  taskPreview,
} from "../../pi-extension/renderers.ts";
import type { LineageMessageDetails } from "../../src/adoption/messages.ts";
import { reportMessage } from "../../src/adoption/reports.ts";
import { ReportMessageDetailsSchema } from "../../src/session/message-types.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";

const input = {
  handoffId: "20260101-100000-feat-x-abcd",
  manifestPath: "/a/m.json",
  branch: "feat/x",
  baseRef: "main",
  baseSha: "0123456789abcdef0123456789abcdef01234567",
  worktreePath: "/work/repo.worktrees/feat-x",
  mainCheckout: "/work/repo",
  parentSessionFile: "/s/parent.jsonl",
};

describe("the collapsed handoff message", () => {
  it("shows branch, base, worktree and the task's first line, then the expand key", () => {
    const message = buildHandoffMessage({ ...input, task: "make the login test pass\nthen tidy up" });
    expect(compactHandoffText(message.details, message.content, "ctrl+o to expand")).toBe(
      [
        "⇢ Handed off to a worktree feat/x from main (0123456789ab)",
        "/work/repo.worktrees/feat-x",
        "task: make the login test pass",
        "ctrl+o to expand",
      ].join("\n"),
    );
  });

  it("says when there is no task, and shortens a long one", () => {
    const none = buildHandoffMessage(input);
    expect(compactHandoffText(none.details, none.content, "").split("\n")).toEqual([
      "⇢ Handed off to a worktree feat/x from main (0123456789ab)",
      "/work/repo.worktrees/feat-x",
      "no task: waiting for you",
    ]);
    const long = buildHandoffMessage({ ...input, task: "x".repeat(500) });
    const preview = taskPreview(long.content) ?? "";
    expect(preview).toHaveLength(100);
    expect(preview.endsWith("…")).toBe(true);
  });
});

describe("the collapsed lineage message", () => {
  const details: LineageMessageDetails = {
    kind: "resume",
    runs: [
      { source: "pi-subagents", runId: "r1", outcome: "active", state: "running", title: "review the parser" },
      { source: "pi-subagents", runId: "r2", outcome: "finished", state: "completed", title: "write the docs" },
      { source: "pi-workflows", runId: "r3", outcome: "interrupted", state: "running", title: "nightly build" },
      { source: "pi-subagents", runId: "r4", outcome: "finished", state: "completed", title: "bench" },
      { source: "handoff", runId: "h1", outcome: "notice", state: "running", title: "an earlier handoff" },
    ],
    omitted: 2,
  };

  it("lists the first runs by name, counts the rest, names the tool and the expand key", () => {
    expect(compactLineageText(details, "ctrl+o to expand")).toBe(
      [
        "⟲ Adopted background work from earlier sessions: 1 running · 1 interrupted · 2 finished",
        "  ● review the parser (pi-subagents, running)",
        "  ✓ write the docs (pi-subagents, completed)",
        "  ✗ nightly build (pi-workflows, running)",
        "  … and 3 more",
        "adopted_runs lists and inspects them · ctrl+o to expand",
      ].join("\n"),
    );
  });

  it("falls back to a title when the details cannot be read", () => {
    expect(compactLineageText(undefined, "ctrl+o to expand")).toBe("⟲ Adopted background work");
  });
});

describe("the collapsed report message (issue 41 point 12: drawn by the package, not as Pi's raw label)", () => {
  const sha = (c: string) => c.repeat(40);
  const base = {
    version: 1 as const,
    id: "1767225600000-0a1b2c3d",
    handoffId: "20260101-100000-feat-x-abcd",
    createdAt: "2026-01-01T00:00:00.000Z",
    branch: "feat/x",
    parentSessionFile: "/s/parent.jsonl",
    commits: [
      { sha: sha("a"), subject: "first" },
      { sha: sha("b"), subject: "second" },
    ],
    commitsTotal: 3,
    redactions: {},
  };

  it("names the handoff, its commits and the report's first line, then the expand key", () => {
    const message = reportMessage({
      ...base,
      kind: "report",
      text: "made the login test pass\nthen tidied up",
      left: "docs",
    });
    const details = ReportMessageDetailsSchema.parse(message.details);
    expect(compactReportText(details, message.content, "ctrl+o to expand")).toBe(
      ["⇠ Report from handoff feat/x · 3 commits", "made the login test pass", "ctrl+o to expand"].join("\n"),
    );
  });

  it("says a landing in one line: where, how, and where the target is now", () => {
    const message = reportMessage({
      ...base,
      kind: "landed",
      text: "Landed",
      landing: { into: "main", strategy: "squash", result: sha("c") },
    });
    const details = ReportMessageDetailsSchema.parse(message.details);
    expect(compactReportText(details, message.content, "")).toBe(
      "⇠ Handoff feat/x was landed into main (squash) · 3 commits · main is now at cccccccccccc",
    );
    // A notice delivered by an older version (no landing in its details) says its own first line.
    const { landing: _landing, ...older } = details;
    expect(compactReportText(older, message.content, "")).toBe(
      `⇠ Handoff feat/x (20260101-100000-feat-x-abcd) was landed into main (squash); main is now at ${sha("c")}.`,
    );
  });
});
