/**
 * The small pure pieces issue 8 added, each pinned down: the crash-point variable, the branch-name
 * length limits, the multiplexer label and tmux literal, the owner of a handoff (a live process,
 * a dead one, a reused pid), and how recovery judges an unfinished handoff by its owner.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { branchNameLengthProblem, MAX_BRANCH_PART_BYTES } from "../../src/git/ref-name.ts";
import { faultPlanFromEnv, KILL_POINTS, seededFraction } from "../../src/faults.ts";
import { isOwnerAlive, ownerOf } from "../../src/manifest/owner.ts";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestSchema, type Manifest } from "../../src/manifest/schema.ts";
import { muxLabel, tmuxLiteral } from "../../src/mux/label.ts";
import { classify, IN_PROGRESS_GRACE_MS, isPrunable, type HandoffFacts } from "../../src/inventory/classify.ts";
import { describeStatus } from "../../src/inventory/format.ts";

describe("PI_HANDOFF_FAULT: one grammar for the fault plan", () => {
  it("kill-after:<point> names one of the crash points, and nothing else kills", () => {
    for (const point of KILL_POINTS)
      expect(faultPlanFromEnv({ PI_HANDOFF_FAULT: `kill-after:${point}` })).toEqual({ killAfter: point });
    expect(KILL_POINTS).toEqual([
      "manifest",
      "window",
      "worktree",
      "session",
      "fork",
      "launching",
      "launch",
      "confirm",
      "focus",
      "land-intent",
      "land-target",
      "land-record",
      "rebase-intent",
      "rebase-move",
      "rebase-record",
      "queue-rebased",
      "queue-checking",
      "queue-landed",
      "queue-undo-intent",
      "queue-undone",
      "queue-decided",
    ]);
    for (const value of [
      undefined,
      "",
      "fork",
      "kill-after:",
      "kill-after:preconditions",
      "kill-after:fork ",
      "KILL-AFTER:fork",
    ]) {
      expect(faultPlanFromEnv(value === undefined ? {} : { PI_HANDOFF_FAULT: value }).killAfter).toBeUndefined();
    }
  });
  it("kill-random:<seed>[:<max ms>] kills at a delay the seed decides, within the bound", () => {
    const delay = (value: string) => faultPlanFromEnv({ PI_HANDOFF_FAULT: value }).killAtMs;
    expect(delay("kill-random:7")).toBe(delay("kill-random:7:3000"));
    expect(delay("kill-random:7:500")).toBe(Math.floor(seededFraction(7) * 500));
    const delays = Array.from({ length: 50 }, (_, seed) => delay(`kill-random:${seed}:1000`) ?? -1);
    for (const ms of delays) expect(ms >= 0 && ms < 1000).toBe(true);
    expect(new Set(delays).size).toBeGreaterThan(40);
    for (const value of ["kill-random:", "kill-random:x", "kill-random:1:", "kill-random:-1", "kill-random:1:2:3"]) {
      expect(faultPlanFromEnv({ PI_HANDOFF_FAULT: value })).toEqual({});
    }
  });
  it("<step> names a step that fails, and nothing else fails", () => {
    for (const step of ["worktree", "setup", "fork", "launch", "confirm"] as const) {
      expect(faultPlanFromEnv({ PI_HANDOFF_FAULT: step })).toEqual({ failAt: step });
    }
    for (const value of [undefined, "", "Fork", "fork ", "kill-after:fork", "nothing"]) {
      expect(faultPlanFromEnv(value === undefined ? {} : { PI_HANDOFF_FAULT: value }).failAt).toBeUndefined();
    }
  });
});

describe("branch names the file system cannot store", () => {
  const commonDir = "/work/repo/.git";
  it("allows parts of up to 250 bytes (git adds .lock), counted in bytes, not characters", () => {
    expect(MAX_BRANCH_PART_BYTES).toBe(250);
    expect(branchNameLengthProblem(`a/${"b".repeat(250)}`, commonDir)).toBeUndefined();
    expect(branchNameLengthProblem("é".repeat(125), commonDir)).toBeUndefined();
    expect(branchNameLengthProblem(`feat/${"b".repeat(251)}`, commonDir)).toBe(
      `The branch name "feat/${"b".repeat(35)}"... (256 characters) has a part of 251 bytes, but git stores each part between slashes as a file name of at most 250 bytes; pick a shorter name.`,
    );
    expect(branchNameLengthProblem("é".repeat(126), commonDir)).toBe(
      `The branch name "${"é".repeat(40)}"... (126 characters) has a part of 252 bytes, but git stores each part between slashes as a file name of at most 250 bytes; pick a shorter name.`,
    );
  });

  it("refuses a name whose reflog lock path would pass PATH_MAX", () => {
    const name = Array.from({ length: 21 }, () => "p".repeat(200)).join("/");
    expect(branchNameLengthProblem(name, commonDir)).toBe(
      `The branch name "${"p".repeat(40)}"... (4220 characters) is too long for git to store under ${commonDir} (the path would exceed 4095 bytes); pick a shorter name.`,
    );
  });
});

describe("labels and paths handed to tmux", () => {
  it("keeps letters, digits and ._/- and turns every other run into one dash: no # survives", () => {
    expect(muxLabel("feat/x-1.2_y")).toBe("feat/x-1.2_y");
    expect(muxLabel("tmux#(touch${IFS}/tmp/c)")).toBe("tmux-touch-IFS-/tmp/c");
    expect(muxLabel("fmt#{pane_id}#S#{window_name}")).toBe("fmt-pane_id-S-window_name");
    expect(muxLabel("ünïcödé/名前-🚀")).toBe("ünïcödé/名前");
    expect(muxLabel("rtl\u202eevil")).toBe("rtl-evil");
    expect(muxLabel("#()")).toBe("handoff");
    expect(muxLabel("x".repeat(300))).toBe("x".repeat(60));
    for (const input of ["a#b", "#{", "##", "#[fg=red]", "$(x)", "`x`", "a;b", "a b"])
      expect(muxLabel(input)).not.toMatch(/[#$`;\s(){}[\]]/);
  });

  it("doubles every # in a literal, which tmux reads back as one", () => {
    expect(tmuxLiteral("/r/#(touch x) repo/##")).toBe("/r/##(touch x) repo/####");
    expect(tmuxLiteral("/plain/path")).toBe("/plain/path");
  });
});

describe("the owner of a handoff", () => {
  it("is this process, identified beyond its pid; alive while it runs", async () => {
    const owner = await ownerOf();
    expect(owner.pid).toBe(process.pid);
    expect(owner.start).toMatch(/^[0-9a-f-]{36}\/\d+$/);
    expect(await isOwnerAlive(owner)).toBe(true);
  });

  it("is dead once its process exited, and a reused pid (another start time) is not it", async () => {
    const child = spawnSync(process.execPath, ["-e", "process.exit(0)"]);
    expect(child.status).toBe(0);
    expect(await isOwnerAlive({ pid: child.pid ?? 0 })).toBe(false);
    const self = await ownerOf();
    expect(await isOwnerAlive({ pid: process.pid, start: `${self.start ?? ""}0` })).toBe(false);
  });
});

describe("an unfinished handoff judged by its owner", () => {
  const CREATED = new Date("2026-01-01T10:00:00.000Z");
  const SOON = new Date(CREATED.getTime() + 5_000);
  const LATER = new Date(CREATED.getTime() + 2 * IN_PROGRESS_GRACE_MS);

  function manifest(state: Manifest["state"]): Manifest {
    const m = newManifest({
      id: "20260101-100000-feat-x-abcd",
      now: CREATED,
      branch: "feat/x",
      base: { ref: "main", sha: "a".repeat(40) },
      repo: { root: "/work/repo", commonDir: "/work/repo/.git" },
      parent: { sessionFile: "/s/parent.jsonl", sessionId: "p", leafId: "abcd1234", cwd: "/work/repo" },
      worktree: { path: "/work/repo.worktrees/feat-x" },
      mux: { kind: "tmux" },
      owner: { pid: 4321, start: "boot/99" },
    });
    if (state !== "provisioning") {
      m.state = state;
      m.history.push({ state, at: CREATED.toISOString() });
      m.mux = { kind: "tmux", socketPath: "/tmp/sock", sessionId: "$1", windowId: "@2", paneId: "%3" };
    }
    return ManifestSchema.parse(m);
  }

  function facts(m: Manifest, patch: Partial<HandoffFacts>): HandoffFacts {
    const created = m.state !== "provisioning";
    return {
      manifest: m,
      now: SOON,
      worktreeDirectoryExists: created,
      registration: created
        ? { code: "listed", branch: "feat/x", detached: false, prunable: false }
        : { code: "not_listed" },
      workspace: created ? { code: "open" } : { code: "none" },
      recordedProcess: undefined,
      piProcesses: [],
      branch: created
        ? {
            code: "present",
            tip: "a".repeat(40),
            mergeTarget: { ref: "main", sha: "a".repeat(40) },
            aheadOfBase: 0,
            unmerged: { total: 0, commits: [] },
            unpushed: { total: 0, commits: [] },
          }
        : { code: "gone" },
      changes: created ? { dirtyFiles: [], untrackedFiles: [] } : undefined,
      childSessionExists: false,
      problems: [],
      ...patch,
    };
  }

  it("is in progress while recent and its owner lives, whatever the state", () => {
    for (const state of ["provisioning", "provisioned", "forked", "launching"] as const) {
      const report = classify(facts(manifest(state), { ownerAlive: true }));
      expect(report.status).toMatchObject({ code: "unfinished", inProgress: true, owner: { pid: 4321, alive: true } });
      expect(report.actions.filter((action) => action !== "focus")).toEqual([]);
    }
  });

  it("is not in progress the moment its owner is dead: recovery may act at once", () => {
    const stopped = classify(facts(manifest("provisioned"), { ownerAlive: false }));
    expect(stopped.status).toEqual({
      code: "unfinished",
      step: "fork",
      inProgress: false,
      owner: { pid: 4321, alive: false },
    });
    expect(stopped.actions).toEqual(["focus", "remove"]);
    expect(describeStatus(stopped.status)).toBe("stopped at fork (pid 4321 gone)");
  });

  it("without a recorded owner (older manifests), keeps the 2-minute grace alone", () => {
    const m = manifest("forked");
    delete m.owner;
    expect(classify(facts(m, {})).status).toEqual({ code: "unfinished", step: "launch", inProgress: true });
    expect(classify(facts(m, { now: LATER })).status).toEqual({
      code: "unfinished",
      step: "launch",
      inProgress: false,
    });
  });

  it("stopped before its worktree: unfinished (not a missing worktree), prunable when git made nothing", () => {
    const report = classify(facts(manifest("provisioning"), { ownerAlive: false, worktreeDirectoryExists: false }));
    expect(report.status).toEqual({
      code: "unfinished",
      step: "worktree",
      inProgress: false,
      owner: { pid: 4321, alive: false },
    });
    expect(report.actions).toEqual(["remove", "prune"]);
    expect(isPrunable(report)).toBe(true);
    // The branch exists after all (killed inside `git worktree add`): not prunable, it may hold work.
    const withBranch = classify(
      facts(manifest("provisioning"), {
        ownerAlive: false,
        branch: {
          code: "present",
          tip: "a".repeat(40),
          mergeTarget: { ref: "main", sha: "a".repeat(40) },
          aheadOfBase: 0,
          unmerged: { total: 0, commits: [] },
          unpushed: { total: 0, commits: [] },
        },
      }),
    );
    expect(withBranch.actions).toEqual(["remove"]);
  });
});
