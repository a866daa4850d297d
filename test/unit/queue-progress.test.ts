/**
 * The parent's widget while a merge queue of its repository runs (issue 44): one line, which child,
 * which step, the check's time so far, within the widget's width; read from the queue's journal
 * only when it changed; none once the run finished, when its process is gone, or for another
 * repository's queue.
 */
import { mkdtempSync, rmSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type QueueJournal, QueueJournalWriter, queueJournalPath } from "../../src/queue/queue-journal.ts";
import { QueueProgressLine } from "../../src/queue/queue-progress.ts";
import { QUEUE_LINE_MAX, queueProgressLine } from "../../src/queue/queue-words.ts";

const NOW = Date.parse("2026-05-01T12:00:00.000Z");
const ago = (ms: number): string => new Date(NOW - ms).toISOString();
const SHA = "a".repeat(40);

function journal(members: QueueJournal["members"], finished = false): QueueJournal {
  return {
    version: 1,
    repoCommonDir: "/repo/.git",
    pid: 4242,
    startedAt: ago(60_000),
    ...(finished ? { finishedAt: ago(0) } : {}),
    updatedAt: ago(1_000),
    keepRebased: false,
    members,
    waiting: [],
  };
}

const landed = {
  id: "h-one",
  branch: "feat/one",
  into: "main",
  worktree: "/w/one",
  step: "done" as const,
  outcome: {
    code: "landed" as const,
    id: "h-one",
    branch: "feat/one",
    into: "main",
    to: SHA,
    commits: 1,
    checked: true,
  },
};
const checking = {
  id: "h-two",
  branch: "feat/two",
  into: "main",
  worktree: "/w/two",
  step: "checking" as const,
  before: SHA,
  rebasedTo: SHA,
  checkStartedAt: ago(12_500),
};
const pending = { id: "h-three", branch: "feat/three", into: "main", worktree: "/w/three", step: "pending" as const };

describe("the widget's queue line", () => {
  it("says which child, which step, the check's time so far, and what is done", () => {
    expect(queueProgressLine(journal([landed, checking, pending]), NOW)).toBe(
      "queue 2/3: feat/two checking 12 s (1 landed)",
    );
    expect(queueProgressLine(journal([landed, { ...checking, step: "rebasing" }, pending]), NOW)).toBe(
      "queue 2/3: feat/two rebasing (1 landed)",
    );
    const sent = {
      ...pending,
      step: "done" as const,
      outcome: {
        code: "sent_back" as const,
        id: "h-three",
        branch: "feat/three",
        reason: { code: "conflict" as const, into: "main", conflicts: ["a.txt"] },
        after: { code: "untouched" as const, tip: SHA },
      },
    };
    expect(queueProgressLine(journal([landed, sent, { ...checking, step: "landing" }]), NOW)).toBe(
      "queue 3/3: feat/two landing (1 landed, 1 sent back)",
    );
    expect(queueProgressLine(journal([pending]), NOW)).toBe("queue 1/1: starting (0 landed)");
    expect(queueProgressLine(journal([landed], true), NOW)).toBeUndefined();
  });

  it("stays within the widget's width: a long branch gives way, the step and the time stay", () => {
    const long = { ...checking, branch: `feat/${"very-long-name-".repeat(8)}end` };
    const line = queueProgressLine(journal([landed, long, pending]), NOW);
    expect(line?.length).toBe(QUEUE_LINE_MAX);
    expect(line).toMatch(/^queue 2\/3: feat\/very-long-name-.*~ checking 12 s \(1 landed\)$/);
  });
});

describe("QueueProgressLine", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("reads the journal in the background, only when it changed, and shows it only for a live run of its own handoffs", async () => {
    dir = mkdtempSync(join(tmpdir(), "phw-queue-line-"));
    const agentDir = dir;
    const path = queueJournalPath(agentDir, "queue-0123456789abcdef");
    const writer = new QueueJournalWriter(path, journal([landed, checking, pending]), () => new Date(NOW));
    await writer.save();
    let alive = true;
    let changes = 0;
    const view = new QueueProgressLine({ agentDir, onChange: () => changes++, minIntervalMs: 0, alive: () => alive });
    const own = new Set(["h-two"]);
    // The first look starts in the background: nothing is known yet.
    expect(view.line(own, NOW)).toBeUndefined();
    await expect.poll(() => changes).toBe(1);
    expect(view.line(own, NOW)).toBe("queue 2/3: feat/two checking 12 s (1 landed)");
    // The time so far moves with the clock, the journal unread.
    expect(view.line(own, NOW + 3_000)).toBe("queue 2/3: feat/two checking 15 s (1 landed)");
    // Another parent's handoffs (another repository's queue): nothing.
    expect(view.line(new Set(["h-other"]), NOW)).toBeUndefined();
    // Its process is gone (killed): nothing here; --status says it.
    alive = false;
    expect(view.line(own, NOW)).toBeUndefined();
    alive = true;
    // A step written: read again (its mtime changed), and the widget is told.
    await writer.step("h-two", (member) => {
      member.step = "landing";
    });
    utimesSync(path, new Date(NOW + 5_000), new Date(NOW + 5_000));
    view.line(own, NOW);
    await expect.poll(() => changes).toBe(2);
    expect(view.line(own, NOW)).toBe("queue 2/3: feat/two landing (1 landed)");
    // Finished: the line goes.
    await writer.save((next) => {
      next.finishedAt = new Date(NOW).toISOString();
    });
    utimesSync(path, new Date(NOW + 9_000), new Date(NOW + 9_000));
    view.line(own, NOW);
    await expect.poll(() => changes).toBe(3);
    expect(view.line(own, NOW)).toBeUndefined();
  });
});
