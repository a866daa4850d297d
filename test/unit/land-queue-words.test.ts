/**
 * The words of the merge queue (issue 44): `land --all` and `land <handoff> <handoff>...` parse
 * as the queue, the options of one landing and of the queue are not mixed, and each waiting
 * reason is said from its code.
 */
import { describe, expect, it } from "vitest";
import { parseRecoveryCommand } from "../../src/recovery/command-line.ts";
import { waitText } from "../../src/recovery/queue-words.ts";

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
  ])("refuses %j in one sentence", (words, message) => {
    expect(parseRecoveryCommand(words, HELP)).toEqual({ ok: false, command: "land", message });
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
});
