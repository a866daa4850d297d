/**
 * The words of the merge queue (issue 44): `land --all` and `land <handoff> <handoff>...` parse
 * as the queue, the options of one landing and of the queue are not mixed, and each waiting
 * reason is said from its code.
 */
import { describe, expect, it } from "vitest";
import { parseRecoveryCommand } from "../../src/cli/command-line.ts";
import type { QueueStatus } from "../../src/queue/queue-status.ts";
import { describeQueuePlan, describeQueueReport, describeQueueStatus, waitText } from "../../src/queue/queue-words.ts";

const HELP = "pi-handoff --help";

describe("land --all and land with several handoffs", () => {
  it("parses the queue: --all with its options, or several handoffs", () => {
    expect(
      parseRecoveryCommand(["land", "--all", "--repo", "../x", "--keep-rebased", "--approve-repo-code"], HELP),
    ).toEqual({
      ok: true,
      parsed: { command: "land", flags: { all: true, "keep-rebased": true, "approve-repo-code": true }, repo: "../x" },
    });
    expect(parseRecoveryCommand(["land", "a", "b", "--dry-run"], HELP)).toEqual({
      ok: true,
      parsed: { command: "land", handoff: "a", handoffs: ["a", "b"], flags: { "dry-run": true } },
    });
    // One handoff is a single landing, as before.
    expect(parseRecoveryCommand(["land", "a", "--into", "dev"], HELP)).toEqual({
      ok: true,
      parsed: { command: "land", handoff: "a", flags: {}, into: "dev" },
    });
  });

  it.each([
    [["land", "--all", "a"], 'Give handoffs or --all, not both: "a" was given with --all (see pi-handoff --help).'],
    [
      ["land", "--all", "--into", "dev"],
      "--into is for landing one handoff; the queue rebases each onto its target and fast-forwards it (see pi-handoff --help).",
    ],
    [
      ["land", "a", "b", "--remove"],
      "--remove is for landing one handoff; the queue rebases each onto its target and fast-forwards it (see pi-handoff --help).",
    ],
    [
      ["land", "a", "--approve-repo-code"],
      "--approve-repo-code goes with the queue: land --all, or land with several handoffs (see pi-handoff --help).",
    ],
    [
      ["land", "a", "b", "--status"],
      "--status goes with --all: land --all --status [--repo DIR] (see pi-handoff --help).",
    ],
    [["land", "--all", "--json"], "--json goes with --status: land --all --status --json (see pi-handoff --help)."],
    [
      ["land", "--all", "--status", "--dry-run"],
      "--status only reads the queue's state; --dry-run does not go with it (see pi-handoff --help).",
    ],
  ])("refuses %j in one sentence", (words, message) => {
    expect(parseRecoveryCommand(words, HELP)).toEqual({ ok: false, command: "land", message });
  });

  it("parses land --all --status [--json] [--repo DIR]", () => {
    expect(parseRecoveryCommand(["land", "--all", "--status", "--json", "--repo", "x"], HELP)).toEqual({
      ok: true,
      parsed: { command: "land", flags: { all: true, status: true, json: true }, repo: "x" },
    });
  });

  it("says a stopped run's children: each step, the refs' word on the one left mid-step, the outcomes", () => {
    const at = "2026-05-01T12:00:00.000Z";
    const [old, rebased, target] = ["1".repeat(40), "2".repeat(40), "3".repeat(40)];
    const status: QueueStatus = {
      repoCommonDir: "/r/.git",
      state: "interrupted",
      refs: [{ id: "h-d", verdict: { code: "not_moved_back", tip: rebased } }],
      journal: {
        version: 1,
        repoCommonDir: "/r/.git",
        pid: 41822,
        startedAt: at,
        updatedAt: at,
        check: { shown: "npm test", timeoutMs: 600_000 },
        keepRebased: false,
        members: [
          {
            id: "h-b",
            branch: "feat/b",
            into: "main",
            worktree: "/w/b",
            step: "done",
            outcome: {
              code: "landed",
              id: "h-b",
              branch: "feat/b",
              into: "main",
              to: target,
              commits: 2,
              checked: true,
            },
          },
          {
            id: "h-d",
            branch: "feat/d",
            into: "main",
            worktree: "/w/d",
            step: "undoing",
            before: old,
            rebasedTo: rebased,
            sending: { code: "conflict", into: "main", conflicts: ["a.txt"] },
          },
          {
            id: "h-c",
            branch: "feat/c",
            into: "main",
            worktree: "/w/c",
            step: "checking",
            checkStartedAt: "2026-05-01T11:59:48.000Z",
            checkLog: "/logs/c.log",
          },
          { id: "h-a", branch: "feat/a", into: "main", worktree: "/w/a", step: "pending" },
        ],
        waiting: [{ code: "waiting", id: "h-e", branch: "feat/e", reason: { code: "nothing_to_land" } }],
      },
    };
    expect(describeQueueStatus(status, Date.parse(at))).toEqual([
      `The last pi-handoff land --all (process 41822, started ${at}) was stopped before it finished; pi-handoff land --all takes it up and finishes it.`,
      "Check (at most 600 s): npm test",
      `  1. h-b feat/b: landed: 2 commits into main, now at ${target.slice(0, 12)} (check passed)`,
      `  2. h-d feat/d: being moved back to ${old.slice(0, 12)}; now feat/d is still at the rebased tip ${rebased.slice(0, 12)} (pi-handoff land --all moves it back)`,
      "  3. h-c feat/c: checking on main's tip for 12 s (log: /logs/c.log)",
      "  4. h-a feat/a: pending",
      "Waiting (1):",
      "  h-e feat/e: nothing to land",
    ]);
    expect(describeQueueStatus({ repoCommonDir: "/r/.git", state: "none", refs: [] }, 0)).toEqual([
      "No pi-handoff land --all has run in this repository yet.",
    ]);
  });

  it("says each waiting reason from its code", () => {
    expect([
      waitText({ code: "nothing_to_land" }),
      waitText({ code: "child_working", label: "working" }),
      waitText({ code: "worktree_dirty", files: ["a.txt", "b.txt"] }),
      waitText({ code: "worktree_dirty", files: [] }),
      waitText({ code: "in_progress", state: "launching" }),
      waitText({ code: "no_target" }),
    ]).toEqual([
      "nothing to land",
      "its Pi is in a turn (working)",
      "uncommitted changes (a.txt, b.txt)",
      "its uncommitted changes could not be read",
      "still being set up (launching)",
      "no branch to land into (its base is not a branch)",
    ]);
  });

  it("a dry run with nothing ready says so, rather than an empty order", () => {
    expect(describeQueuePlan({ members: [], waiting: [], problems: [] }, undefined, "")).toEqual([
      "Dry run, nothing changed. No handoff of this repository is ready to land.",
      "No check is set: each lands without one (settings: check).",
    ]);
    const waiting = [{ id: "a1b2c3", branch: "feat/x", reason: { code: "nothing_to_land" as const } }];
    expect(describeQueuePlan({ members: [], waiting, problems: [] }, undefined, "")).toEqual([
      "Dry run, nothing changed. No handoff of this repository is ready to land: each one below waits.",
      "No check is set: each lands without one (settings: check).",
      "Waiting (1):",
      "  a1b2c3 feat/x: nothing to land",
    ]);
  });

  it("a refusal's own sentence becomes a clause of the report's line, ended once", () => {
    const tip = "4".repeat(40);
    const lines = describeQueueReport({
      landed: [],
      waiting: [],
      sentBack: [
        {
          code: "sent_back",
          id: "a1b2c3",
          branch: "feat/x",
          reason: {
            code: "refused",
            into: "main",
            step: "rebase",
            message: "Could not plan the rebase: git failed; nothing was rebased.",
          },
          after: { code: "untouched", tip },
        },
      ],
    });
    expect(lines).toContain(
      `  a1b2c3 feat/x: the rebase was refused: Could not plan the rebase: git failed; nothing was rebased. feat/x and its worktree were not changed (feat/x is at ${tip.slice(0, 12)}).`,
    );
  });
});
