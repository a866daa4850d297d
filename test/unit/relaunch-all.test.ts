/**
 * `relaunch --all` and the offer after a reboot, without processes: the grammar's words, the
 * report's lines, the offer's key and wording, and which handoffs a Pi speaks for.
 */
import { describe, expect, it } from "vitest";
import { newManifest } from "../../src/manifest/factory.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { parseRecoveryCommand } from "../../src/cli/command-line.ts";
import { classify, type HandoffFacts } from "../../src/inventory/classify.ts";
import {
  formatRelaunchAll,
  isRestorable,
  relaunchAllDecision,
  type RelaunchAllResult,
} from "../../src/relaunch/relaunch-all.ts";
import { offerKey, offerMessage, speaksFor } from "../../src/relaunch/restore-offer.ts";

const HELP = "pi-handoff --help";

const CLI = "pi-handoff";

describe("relaunch --all: the words", () => {
  it("takes --all without a handoff, with --repo DIR or --all-repos", () => {
    expect(parseRecoveryCommand(["relaunch", "--all"], HELP)).toEqual({
      ok: true,
      parsed: { command: "relaunch", flags: { all: true } },
    });
    expect(parseRecoveryCommand(["relaunch", "--all", "--repo", "../x"], HELP)).toEqual({
      ok: true,
      parsed: { command: "relaunch", flags: { all: true }, repo: "../x" },
    });
    expect(parseRecoveryCommand(["relaunch", "--all", "--all-repos"], HELP)).toEqual({
      ok: true,
      parsed: { command: "relaunch", flags: { all: true, "all-repos": true } },
    });
    // A single relaunch is as it was.
    expect(parseRecoveryCommand(["relaunch", "feat/x", "--no-focus"], HELP)).toEqual({
      ok: true,
      parsed: { command: "relaunch", handoff: "feat/x", flags: { "no-focus": true } },
    });
  });

  it("refuses each wrong combination in one sentence", () => {
    const refusal = (words: string[]) => {
      const parsed = parseRecoveryCommand(words, HELP);
      return parsed.ok ? "accepted" : parsed.message;
    };
    expect(refusal(["relaunch", "feat/x", "--all"])).toBe(
      'Give a handoff or --all, not both: "feat/x" was given with --all (see pi-handoff --help).',
    );
    expect(refusal(["relaunch", "--repo", "."])).toBe(
      "--repo goes with --all: relaunch --all --repo DIR (see pi-handoff --help).",
    );
    expect(refusal(["relaunch", "--all-repos"])).toBe(
      "--all-repos goes with --all: relaunch --all --all-repos (see pi-handoff --help).",
    );
    expect(refusal(["relaunch", "--all", "--repo", ".", "--all-repos"])).toBe(
      "Give --repo DIR or --all-repos, not both (see pi-handoff --help).",
    );
    expect(refusal(["relaunch"])).toBe(
      "Name the handoff: its id, the start of its id, or its branch (pi-handoff list or /handoffs shows them).",
    );
    expect(refusal(["relaunch", "--al"])).toBe('Unknown option "--al": did you mean --all (see pi-handoff --help)?');
  });
});

describe("relaunch --all: which handoffs, and which are offered back", () => {
  const at = new Date("2026-01-01T00:00:00.000Z");
  const later = new Date("2026-01-02T00:00:00.000Z");
  const worktree = "/r.worktrees/feat-x";
  const base = newManifest({
    id: "20260101-000000-feat-x-0001",
    now: at,
    branch: "feat/x",
    base: { ref: "main", sha: "a".repeat(40) },
    repo: { root: "/r", commonDir: "/r/.git" },
    parent: { sessionFile: "/p.jsonl", sessionId: "p", leafId: null, cwd: "/r" },
    worktree: { path: worktree },
    mux: { kind: "tmux", socketPath: "/tmp/sock", sessionId: "$0", windowId: "@1", paneId: "%1" },
  });
  const running: Manifest = {
    ...base,
    state: "running",
    child: { sessionFile: "/c.jsonl", sessionId: "c", pid: 4242, model: { provider: "faux", id: "faux-1" } },
  };
  const facts = (patch: Partial<HandoffFacts> = {}): HandoffFacts => ({
    manifest: running,
    now: later,
    worktreeDirectoryExists: true,
    registration: { code: "listed", branch: "feat/x", detached: false, prunable: false },
    // After a reboot: the tmux server is gone, so is the window.
    workspace: { code: "closed" },
    recordedProcess: undefined,
    piProcesses: [],
    branch: { code: "gone" },
    changes: { dirtyFiles: [], untrackedFiles: [] },
    childSessionExists: true,
    problems: [],
    ...patch,
  });
  const judged = (patch: Partial<HandoffFacts> = {}) => {
    const report = classify(facts(patch));
    return [relaunchAllDecision(report), isRestorable(report)];
  };

  it("relaunches and offers one whose Pi is gone with its worktree and session intact", () => {
    expect(judged()).toEqual(["relaunch", true]);
    expect(judged({ workspace: { code: "open" } })).toEqual(["relaunch", true]);
  });

  it("counts a Pi on the session as running, whoever started it (Herdr's resume: no marker, the lease)", () => {
    expect(judged({ lease: { state: "live", pid: 777, heartbeatAt: later.toISOString() } })).toEqual([
      "already_running",
      false,
    ]);
    expect(judged({ piProcesses: [{ pid: 778, name: "pi", cwd: worktree }] })).toEqual(["already_running", false]);
  });

  it("tries but does not offer one whose writer or terminal cannot be checked: the relaunch says why", () => {
    expect(judged({ lease: { state: "unreadable", message: "The lease could not be read." } })).toEqual([
      "relaunch",
      false,
    ]);
    expect(judged({ workspace: { code: "unknown", message: "Herdr's server is not running." } })).toEqual([
      "relaunch",
      false,
    ]);
  });

  it("leaves alone one with nothing to start a Pi on", () => {
    expect(judged({ worktreeDirectoryExists: false, registration: { code: "not_listed" } })).toEqual(["skip", false]);
    expect(judged({ childSessionExists: false })).toEqual(["skip", false]);
  });
});

describe("relaunch --all: the report", () => {
  const result = (lines: RelaunchAllResult["lines"], skipped = 0, landed = 0): RelaunchAllResult => ({
    scope: { name: "/r", repoCommonDir: "/r/.git" },
    lines,
    skipped,
    landed,
    ok: lines.every((line) => line.code === "restored" || line.code === "already_running"),
  });

  it("says one line per handoff, aligned, then how many of each", () => {
    expect(
      formatRelaunchAll(
        result(
          [
            {
              id: "i1",
              branch: "a",
              code: "restored",
              message: "Pi pid 11 runs on its session in tmux window @1 (pane %1).",
            },
            { id: "i2", branch: "b", code: "already_running", message: "Pi pid 12 has its session." },
            { id: "i3", branch: "c", code: "refused", message: "Handoff i3 is busy." },
          ],
          1,
        ),
        "/opt/phw/bin/pi-handoff.mjs",
      ),
    ).toEqual([
      "restored         a (i1): Pi pid 11 runs on its session in tmux window @1 (pane %1).",
      "already running  b (i2): Pi pid 12 has its session.",
      "refused          c (i3): Handoff i3 is busy.",
      "3 handoffs of /r: 1 restored, 1 already running, 1 refused (1 other handoff with no worktree or session to start a Pi on, left alone; /opt/phw/bin/pi-handoff.mjs list shows it).",
    ]);
  });

  it("says in one line that there is nothing to do", () => {
    const running = { id: "i", branch: "b", code: "already_running", message: "Pi pid 1 has its session." } as const;
    expect(formatRelaunchAll(result([running, { ...running, id: "j" }]), CLI)).toEqual([
      "Nothing to relaunch: all 2 handoffs of /r already run a Pi on their sessions.",
    ]);
    expect(formatRelaunchAll(result([running]), CLI)).toEqual([
      "Nothing to relaunch: the one handoff of /r already runs a Pi on its session.",
    ]);
    expect(formatRelaunchAll(result([], 2), CLI)).toEqual([
      "Nothing to relaunch: no handoff of /r has a worktree and a session to start a Pi on (2 other handoffs with no worktree or session to start a Pi on, left alone; pi-handoff list shows them).",
    ]);
  });

  it("calls landed handoffs landed, not handoffs with no worktree or session", () => {
    const restored = { id: "i1", branch: "a", code: "restored", message: "Pi pid 11 runs." } as const;
    expect(formatRelaunchAll(result([restored], 0, 2), CLI).at(-1)).toBe(
      "1 handoff of /r: 1 restored (2 landed handoffs left alone; pi-handoff list shows them).",
    );
    expect(formatRelaunchAll(result([restored], 1, 1), CLI).at(-1)).toBe(
      "1 handoff of /r: 1 restored (1 landed handoff and 1 handoff with no worktree or session to start a Pi on, left alone; pi-handoff list shows them).",
    );
    expect(formatRelaunchAll(result([], 0, 1), CLI)).toEqual([
      "Nothing to relaunch: no handoff of /r waits for a Pi (1 landed handoff left alone; pi-handoff list shows it).",
    ]);
  });
});

describe("the offer after a reboot", () => {
  it("names a set by its ids and their manifests' last change, in any order", () => {
    const a = { id: "a", updatedAt: "2026-01-01T00:00:00.000Z" };
    const b = { id: "b", updatedAt: "2026-01-01T00:00:01.000Z" };
    expect(offerKey([a, b])).toBe(offerKey([b, a]));
    expect(offerKey([a, b])).toMatch(/^[0-9a-f]{32}$/);
    expect(offerKey([a, b])).not.toBe(offerKey([a]));
    // Relaunched and lost again: a new change, a new set.
    expect(offerKey([a, { ...b, updatedAt: "2026-01-02T00:00:00.000Z" }])).not.toBe(offerKey([a, b]));
  });

  it("says how many, which, and the one command", () => {
    expect(offerMessage([{ branch: "feat/a" }], "/handoffs relaunch --all")).toBe(
      "1 handoff has no Pi running, with its worktree and session intact (feat/a). To bring it back, run: /handoffs relaunch --all",
    );
    const seven = ["a", "b", "c", "d", "e", "f", "g"].map((branch) => ({ branch }));
    expect(offerMessage(seven, "pi-handoff relaunch --all")).toBe(
      "7 handoffs have no Pi running, with their worktree and session intact (a, b, c, d, e, and 2 more). To bring them all back, run: pi-handoff relaunch --all",
    );
  });

  it("speaks for its repository's handoffs and those it parented; a child only for those it parented", () => {
    const at = new Date("2026-01-01T00:00:00.000Z");
    const manifest = (id: string, repo: string, parentFile: string, childFile: string): Manifest => {
      const made = newManifest({
        id,
        now: at,
        branch: id,
        base: { ref: "HEAD", sha: "a".repeat(40) },
        repo: { root: `/${repo}`, commonDir: `/${repo}/.git` },
        parent: { sessionFile: parentFile, sessionId: parentFile, leafId: null, cwd: `/${repo}` },
        worktree: { path: `/${repo}.worktrees/${id}` },
        mux: { kind: "tmux", socketPath: "/tmp/sock" },
      });
      return { ...made, child: { ...made.child, sessionFile: childFile } };
    };
    const all = [
      manifest("20260101-000000-a-0001", "r", "/p.jsonl", "/a.jsonl"),
      manifest("20260101-000000-b-0002", "r", "/a.jsonl", "/b.jsonl"),
      manifest("20260101-000000-c-0003", "other", "/p.jsonl", "/c.jsonl"),
      manifest("20260101-000000-d-0004", "other", "/x.jsonl", "/d.jsonl"),
    ];
    const kept = (pi: Parameters<typeof speaksFor>[0]) => all.filter(speaksFor(pi, all)).map((m) => m.branch);
    // The parent, in r: r's handoffs and its own (c, made from another repository's checkout).
    expect(kept({ repoCommonDir: "/r/.git", session: { sessionId: "/p.jsonl", sessionFile: "/p.jsonl" } })).toEqual([
      "20260101-000000-a-0001",
      "20260101-000000-b-0002",
      "20260101-000000-c-0003",
    ]);
    // Handoff a's child, in r's worktree: only what it handed off itself.
    expect(kept({ repoCommonDir: "/r/.git", session: { sessionId: "/a.jsonl", sessionFile: "/a.jsonl" } })).toEqual([
      "20260101-000000-b-0002",
    ]);
    // Any Pi outside a repository: only its own.
    expect(kept({ session: { sessionId: "new", sessionFile: "/new.jsonl" } })).toEqual([]);
  });
});
