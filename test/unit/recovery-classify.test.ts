/**
 * The recovery verdict as a pure function: every status, the writer evidence (including a reused
 * pid and a Herdr-restarted Pi without the marker), the flags, and which actions are offered.
 */
import { describe, expect, it } from "vitest";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestSchema, type Manifest } from "../../src/manifest/schema.ts";
import {
  classify,
  findWriters,
  isPrunable,
  IN_PROGRESS_GRACE_MS,
  type HandoffFacts,
} from "../../src/inventory/classify.ts";
import { branchDeletionOffer, type RemovalPlan } from "../../src/remove/plan.ts";
import { HandoffReportSchema, type BranchFact, type HandoffReport } from "../../src/inventory/report-schema.ts";
import { formatInventory, formatReport } from "../../src/inventory/format.ts";

const BASE = "a".repeat(40);
const TIP = "b".repeat(40);
const WORKTREE = "/work/repo.worktrees/feat-x";
const CREATED = new Date("2026-01-01T10:00:00.000Z");
const LATER = new Date(CREATED.getTime() + 10 * IN_PROGRESS_GRACE_MS);
const ID = "20260101-100000-feat-x-abcd";

function manifest(state: Manifest["state"], patch: (m: Manifest) => void = () => {}): Manifest {
  const m = newManifest({
    id: ID,
    now: CREATED,
    branch: "feat/x",
    base: { ref: "main", sha: BASE },
    repo: { root: "/work/repo", commonDir: "/work/repo/.git" },
    parent: { sessionFile: "/s/parent.jsonl", sessionId: "p", leafId: "abcd1234", cwd: "/work/repo" },
    worktree: { path: WORKTREE },
    mux: { kind: "tmux", socketPath: "/tmp/sock", sessionId: "$1", windowId: "@2", paneId: "%3" },
  });
  m.state = state;
  m.history.push({ state, at: CREATED.toISOString() });
  m.child = { sessionFile: "/s/child.jsonl", sessionId: "c", pid: 4242, model: { provider: "faux", id: "faux-1" } };
  patch(m);
  return ManifestSchema.parse(m);
}

const merged: BranchFact = {
  code: "present",
  tip: TIP,
  mergeTarget: { ref: "main", sha: TIP },
  aheadOfBase: 2,
  unmerged: { total: 0, commits: [] },
  unpushed: {
    total: 2,
    commits: [
      { sha: TIP, subject: "second" },
      { sha: "c".repeat(40), subject: "first" },
    ],
  },
};
const unmerged: BranchFact = { ...merged, mergeTarget: { ref: "main", sha: BASE }, unmerged: merged.unpushed };
const untouched: BranchFact = { ...merged, tip: BASE, aheadOfBase: 0, unpushed: { total: 0, commits: [] } };

function facts(m: Manifest, patch: Partial<HandoffFacts> = {}): HandoffFacts {
  return {
    manifest: m,
    now: LATER,
    worktreeDirectoryExists: true,
    registration: { code: "listed", branch: "feat/x", detached: false, prunable: false },
    workspace: { code: "open" },
    recordedProcess: undefined,
    piProcesses: [],
    branch: untouched,
    changes: { dirtyFiles: [], untrackedFiles: [] },
    childSessionExists: true,
    problems: [],
    ...patch,
  };
}

/** Classify, check the report against the published schema, and return the parts tests look at. */
function verdict(f: HandoffFacts) {
  const report = HandoffReportSchema.parse(classify(f));
  return { status: report.status, flags: report.flags, actions: report.actions, worktree: report.worktree };
}

describe("classify", () => {
  it("a removed handoff is a record only: no action", () => {
    const m = manifest("running", (m) => {
      m.state = "removed";
      m.history.push({ state: "removed", at: "2026-01-02T00:00:00.000Z" });
    });
    expect(verdict(facts(m, { workspace: { code: "unknown", message: "not checked" } }))).toMatchObject({
      status: { code: "removed", at: "2026-01-02T00:00:00.000Z" },
      actions: [],
    });
  });

  it("the recorded child, alive and matching, is a running child whatever the manifest says", () => {
    const m = manifest("launch_unconfirmed", (m) => {
      m.error = { step: "confirm", message: "late", at: CREATED.toISOString() };
    });
    const child = { pid: 4242, name: "pi", cwd: WORKTREE, handoffId: ID };
    const v = verdict(facts(m, { recordedProcess: child, piProcesses: [child] }));
    expect(v.status).toEqual({
      code: "child_running",
      writers: [{ pid: 4242, evidence: ["recorded_pid", "marker", "cwd"] }],
    });
    // Never relaunch or remove under a live writer; the window can still be shown.
    expect(v.actions).toEqual(["focus"]);
  });

  it("a reused pid (another process now) is not the child", () => {
    const m = manifest("running");
    const impostors = [
      { pid: 4242, name: "bash", cwd: WORKTREE, handoffId: ID },
      { pid: 4242, name: "pi", cwd: "/elsewhere", handoffId: "20260101-100000-other-ffff" },
    ];
    for (const recordedProcess of impostors) {
      expect(verdict(facts(m, { recordedProcess })).status).toEqual({ code: "no_child" });
    }
  });

  it("finds a Pi that Herdr restarted in the worktree without the marker, and one with the marker anywhere", () => {
    const m = manifest("running");
    const restarted = { pid: 77, name: "pi", cwd: `${WORKTREE}/src` };
    const marked = { pid: 12, name: "pi", cwd: "/tmp", handoffId: ID };
    const unrelated = [
      { pid: 5, name: "pi", cwd: `${WORKTREE}-2` },
      { pid: 6, name: "node", cwd: WORKTREE, handoffId: ID },
    ];
    expect(findWriters(m, undefined, [restarted, ...unrelated, marked])).toEqual([
      { pid: 12, evidence: ["marker"] },
      { pid: 77, evidence: ["cwd"] },
    ]);
  });

  it("a live lease on the child session is a running child, even with no process evidence (a Pi started by hand elsewhere)", () => {
    const m = manifest("running", (m) => {
      delete m.child.pid;
    });
    const lease = { state: "live" as const, pid: 5151, heartbeatAt: LATER.toISOString() };
    expect(verdict(facts(m, { lease }))).toMatchObject({
      status: { code: "child_running", writers: [{ pid: 5151, evidence: ["lease"] }] },
      actions: ["focus"],
    });
    // The probes agree on the same pid: one writer, the lease first.
    const probed = facts(m, { lease, piProcesses: [{ pid: 5151, name: "pi", cwd: WORKTREE }] });
    expect(verdict(probed).status).toEqual({
      code: "child_running",
      writers: [{ pid: 5151, evidence: ["lease", "cwd"] }],
    });
  });

  it("a stale or absent lease leaves the verdict to the process probes", () => {
    const m = manifest("running", (m) => {
      delete m.child.pid;
    });
    expect(
      verdict(facts(m, { lease: { state: "stale", pid: 5151, heartbeatAt: CREATED.toISOString() } })).status,
    ).toEqual({ code: "no_child" });
    expect(
      verdict(facts(m, { lease: { state: "none" }, piProcesses: [{ pid: 6, name: "pi", handoffId: ID }] })).status,
    ).toEqual({
      code: "child_running",
      writers: [{ pid: 6, evidence: ["marker"] }],
    });
  });

  it("offers no relaunch when the writer could not be checked, and says why", () => {
    const m = manifest("running", (m) => {
      delete m.child.pid;
    });
    const unreadable = classify(
      facts(m, { lease: { state: "unreadable", message: "The session lease /a/b.json is not valid JSON." } }),
    );
    expect(unreadable.writerUnknown).toBe("The session lease /a/b.json is not valid JSON");
    expect(unreadable.actions).toEqual(["focus", "remove"]);
    const noTable = classify(
      facts(m, {
        lease: { state: "none" },
        processScanProblem: "Running processes could not be looked for: ps did not answer within 5 s.",
      }),
    );
    expect(noTable.writerUnknown).toBe("Running processes could not be looked for: ps did not answer within 5 s");
    expect(noTable.actions).toEqual(["focus", "remove"]);
    expect(HandoffReportSchema.parse(noTable).writerUnknown).toBe(noTable.writerUnknown);
    // With everything readable the same handoff may be relaunched.
    expect(classify(facts(m, { lease: { state: "none" } })).actions).toEqual(["relaunch", "focus", "remove"]);
  });

  it("takes Herdr's own view of the pane as evidence: an agent it detects on the child session, by the pids it names", () => {
    const m = manifest("running");
    const session = m.child.sessionFile ?? "";
    const agent = (status: string, sessionFile: string | undefined, pids: number[]) => ({
      code: "open" as const,
      agent: { status, ...(sessionFile === undefined ? {} : { sessionFile }), pids },
    });
    expect(findWriters(m, undefined, [], undefined, agent("idle", session, [31, 32]))).toEqual([
      { pid: 31, evidence: ["herdr_agent"] },
      { pid: 32, evidence: ["herdr_agent"] },
    ]);
    expect(verdict(facts(m, { workspace: agent("working", session, [31]) })).status).toEqual({
      code: "child_running",
      writers: [{ pid: 31, evidence: ["herdr_agent"] }],
    });
    // Herdr sees its Pi there but cannot tell the state (a Pi it resumed itself): still the writer.
    expect(
      findWriters(m, undefined, [], undefined, {
        code: "open",
        agent: { status: "unknown", label: "pi", sessionFile: session, pids: [31] },
      }),
    ).toEqual([{ pid: 31, evidence: ["herdr_agent"] }]);
    // Another agent Herdr sees there, on a session it kept from the child: not the child.
    expect(
      findWriters(m, undefined, [], undefined, {
        code: "open",
        agent: { status: "unknown", label: "claude", sessionFile: session, pids: [31] },
      }),
    ).toEqual([]);
    // No agent detected (Herdr keeps a session after its agent ended), or another session: no writer.
    expect(findWriters(m, undefined, [], undefined, agent("unknown", session, [31]))).toEqual([]);
    expect(findWriters(m, undefined, [], undefined, agent("idle", `${session}.other`, [31]))).toEqual([]);
    expect(findWriters(m, undefined, [], undefined, agent("idle", undefined, [31]))).toEqual([]);
  });

  it("leaves a recently changed unfinished handoff alone, and judges a stale one", () => {
    const m = manifest("launching", (m) => {
      m.updatedAt = new Date(LATER.getTime() - 1_000).toISOString();
    });
    expect(verdict(facts(m))).toMatchObject({
      status: { code: "unfinished", step: "confirm", inProgress: true },
      actions: ["focus"],
    });
    const stale = manifest("forked");
    expect(verdict(facts(stale))).toMatchObject({
      status: { code: "unfinished", step: "launch", inProgress: false },
      actions: ["relaunch", "focus", "remove"],
    });
  });

  it("a handoff that failed before its worktree existed can be pruned", () => {
    const m = manifest("failed", (m) => {
      m.mux = { kind: "tmux" };
      m.child = {};
      m.error = { step: "worktree", message: "tmux has no session $9.", at: CREATED.toISOString() };
    });
    const v = verdict(
      facts(m, {
        worktreeDirectoryExists: false,
        registration: { code: "not_listed" },
        workspace: { code: "none" },
        branch: { code: "gone" },
        changes: undefined,
        childSessionExists: false,
      }),
    );
    expect(v).toEqual({
      status: { code: "failed", step: "worktree", message: "tmux has no session $9.", worktreeCreated: false },
      flags: [],
      actions: ["remove", "prune"],
      worktree: { code: "missing" },
    });
  });

  it("a missing worktree with a merged branch can be pruned; with unmerged commits it cannot", () => {
    const gone = {
      worktreeDirectoryExists: false,
      registration: { code: "not_listed" as const },
      changes: undefined,
      workspace: { code: "closed" as const },
    };
    const m = manifest("running");
    expect(verdict(facts(m, { ...gone, branch: merged }))).toMatchObject({
      status: { code: "worktree_missing" },
      flags: ["unpushed", "merged"],
      actions: ["remove", "prune"],
    });
    expect(verdict(facts(m, { ...gone, branch: unmerged }))).toMatchObject({
      status: { code: "worktree_missing" },
      flags: ["unpushed", "unmerged"],
      // Its commits can still be landed: a landing works in the object store, without the worktree.
      actions: ["land", "remove"],
    });
    expect(verdict(facts(m, { ...gone, branch: { code: "gone" } }))).toMatchObject({ actions: ["remove", "prune"] });
  });

  it("a vanished directory git still lists is prunable", () => {
    const v = verdict(
      facts(manifest("running"), { worktreeDirectoryExists: false, changes: undefined, workspace: { code: "closed" } }),
    );
    expect(v).toMatchObject({
      status: { code: "prunable" },
      worktree: { code: "prunable" },
      actions: ["remove", "prune"],
    });
  });

  it.each([
    [{ code: "not_listed" as const }, "git does not list it as a worktree of the repository"],
    [
      { code: "listed" as const, branch: "other", detached: false, prunable: false },
      "it has branch other checked out, not feat/x",
    ],
    [{ code: "listed" as const, detached: true, prunable: false }, "its HEAD is detached, not on the handoff's branch"],
  ])("a directory that is not the branch's worktree any more is an orphaned checkout (%o)", (registration, reason) => {
    const v = verdict(facts(manifest("running"), { registration }));
    expect(v.status).toEqual({ code: "orphaned_checkout", reason });
    // Pi is never started in a checkout that is not the handoff's.
    expect(v.actions).toEqual(["focus", "remove"]);
  });

  it("an empty directory git does not list is the claim of a checkout never made: no checkout, not an orphan", () => {
    // Killed between addWorktree's mkdir and git's checkout, its window already open in that directory.
    const killed = manifest("provisioning", (m) => {
      m.child = {};
    });
    const claim = {
      worktreeDirectoryExists: true,
      worktreeDirectoryEmpty: true,
      registration: { code: "not_listed" as const },
      changes: { dirtyFiles: [], untrackedFiles: [] },
      branch: { code: "gone" as const },
      childSessionExists: false,
      ownerAlive: false,
    };
    expect(verdict(facts(killed, claim))).toMatchObject({
      status: { code: "unfinished", step: "worktree", inProgress: false },
      worktree: { code: "claimed" },
      // Remove closes the window and gives the directory back; prune, which deletes no file, is not offered.
      actions: ["focus", "remove"],
    });
    // A directory with anything in it is someone's, whatever git says: left alone.
    expect(verdict(facts(killed, { ...claim, worktreeDirectoryEmpty: false }))).toMatchObject({
      status: { code: "orphaned_checkout", reason: "git does not list it as a worktree of the repository" },
      worktree: { code: "orphaned", reason: "git does not list it as a worktree of the repository" },
    });
    // Later in its life an emptied, unlisted directory is a missing worktree, not a claim to keep.
    const { ownerAlive: _, ...claimOfARunningHandoff } = claim;
    expect(verdict(facts(manifest("running"), claimOfARunningHandoff))).toMatchObject({
      status: { code: "worktree_missing" },
      worktree: { code: "claimed" },
      actions: ["focus", "remove"],
    });
    // Where a missing worktree would be pruned (merged branch, window closed), a claim is not:
    // retiring it would leave its directory for good.
    const retirable = { ...claimOfARunningHandoff, branch: merged, workspace: { code: "closed" as const } };
    expect(
      verdict(
        facts(manifest("running"), { ...retirable, worktreeDirectoryEmpty: false, worktreeDirectoryExists: false }),
      ),
    ).toMatchObject({
      status: { code: "worktree_missing" },
      actions: ["remove", "prune"],
    });
    expect(verdict(facts(manifest("running"), retirable))).toMatchObject({
      status: { code: "worktree_missing" },
      worktree: { code: "claimed" },
      actions: ["remove"],
    });
  });

  it("names the step of a failure and of an unconfirmed launch", () => {
    const failed = manifest("failed", (m) => {
      m.error = { step: "launch", message: "The shell did not become ready.", at: CREATED.toISOString() };
    });
    expect(verdict(facts(failed)).status).toEqual({
      code: "failed",
      step: "launch",
      message: "The shell did not become ready.",
      worktreeCreated: true,
    });
    const unconfirmed = manifest("launch_unconfirmed", (m) => {
      m.error = { step: "confirm", message: "No ack.", at: CREATED.toISOString() };
    });
    expect(verdict(facts(unconfirmed)).status).toEqual({ code: "unconfirmed", step: "confirm", message: "No ack." });
  });

  it("tells a closed window from an open one when no Pi runs", () => {
    const m = manifest("running");
    expect(verdict(facts(m, { workspace: { code: "closed" } }))).toMatchObject({
      status: { code: "workspace_closed" },
      actions: ["relaunch", "remove"],
    });
    expect(verdict(facts(m))).toMatchObject({ status: { code: "no_child" }, actions: ["relaunch", "focus", "remove"] });
  });

  it("does not offer relaunch without recorded launch settings or a child session", () => {
    const noModel = manifest("running", (m) => {
      delete m.child.model;
    });
    expect(verdict(facts(noModel)).actions).toEqual(["focus", "remove"]);
    expect(verdict(facts(manifest("running"), { childSessionExists: false })).actions).toEqual(["focus", "remove"]);
  });

  it("flags uncommitted work and commits independently of the status", () => {
    const v = verdict(
      facts(manifest("running"), { changes: { dirtyFiles: ["a.txt"], untrackedFiles: ["new/"] }, branch: unmerged }),
    );
    expect(v.flags).toEqual(["dirty", "untracked", "unpushed", "unmerged"]);
    // A branch without commits is not "merged": there is no work that reached the base.
    expect(verdict(facts(manifest("running"))).flags).toEqual([]);
  });

  it("isPrunable never retires a failed-early handoff whose window is still open", () => {
    const m = manifest("failed", (m) => {
      m.error = { step: "worktree", message: "x", at: CREATED.toISOString() };
    });
    const report = classify(
      facts(m, { worktreeDirectoryExists: false, registration: { code: "not_listed" }, workspace: { code: "open" } }),
    );
    expect(report.status.code).toBe("failed");
    expect(isPrunable(report)).toBe(false);
  });
});

describe("branchDeletionOffer (the /handoffs question after a confirmed removal)", () => {
  function plan(m: Manifest, branch: BranchFact): RemovalPlan {
    const report = HandoffReportSchema.parse(classify(facts(m, { branch })));
    return {
      manifest: m,
      report,
      worktree: "remove",
      lostFiles: { dirty: [], untracked: [], ignored: [] },
      kept: { commits: [], refs: [] },
      unread: [],
      unmerged: undefined,
      branch: { code: "keep" },
      closesWorkspace: true,
    };
  }

  it("offers to delete a merged branch the handoff created, with the deletion in the plan to confirm", () => {
    const offer = branchDeletionOffer(plan(manifest("running"), merged));
    expect(offer?.question).toBe("Also delete branch feat/x?");
    expect(offer?.detail).toBe("Everything on it is in main, so no commit is lost.");
    expect(offer?.plan.branch).toEqual({
      code: "delete",
      tip: TIP,
      mergeTarget: { ref: "main", sha: TIP },
      by: { rule: "ancestry" },
    });
  });

  it("never offers a branch the handoff did not create (--existing), nor one with unmerged commits", () => {
    const existing = manifest("running", (m) => {
      m.setup = { existingBranch: true };
    });
    expect(branchDeletionOffer(plan(existing, merged))).toBeUndefined();
    expect(branchDeletionOffer(plan(manifest("running"), unmerged))).toBeUndefined();
  });
});

describe("reserved ports", () => {
  const withPorts = (state: Manifest["state"]) =>
    manifest(state, (m) => {
      m.ports = [20000, 20001, 20002, 20003, 20004];
    });
  const inUse = { free: false, inUse: true, reason: "something listens on 127.0.0.1:2000x" } as const;

  it("reports the ports a live handoff holds, and none once it is removed", () => {
    expect(HandoffReportSchema.parse(classify(facts(withPorts("running")))).ports).toEqual([
      20000, 20001, 20002, 20003, 20004,
    ]);
    expect(classify(facts(withPorts("removed"))).ports).toBeUndefined();
    expect(classify(facts(manifest("running"))).ports).toBeUndefined();
  });

  it("tells its own server from someone else's, and an unreadable answer from either", () => {
    const report = HandoffReportSchema.parse(
      classify(
        facts(withPorts("running"), {
          ports: [
            { port: 20000, answer: { free: true } },
            // Its own: the marker, or working in the worktree (a server started in its pane's shell).
            {
              port: 20001,
              answer: inUse,
              listeners: [
                { pid: 11, name: "node", handoffId: ID },
                { pid: 12, name: "node", cwd: `${WORKTREE}/web` },
              ],
            },
            // A stranger: another handoff's marker, a cwd that only starts like the worktree.
            {
              port: 20002,
              answer: inUse,
              listeners: [
                { pid: 11, name: "node", handoffId: ID },
                { pid: 21, name: "postgres", cwd: `${WORKTREE}-other`, handoffId: "other" },
              ],
            },
            // In use, and no listener this user can see: another user's.
            { port: 20003, answer: inUse, listeners: [] },
            { port: 20004, answer: inUse, listenersProblem: "lsof is not installed." },
          ],
        }),
      ),
    );
    expect(report.portChecks).toEqual([
      { code: "free", port: 20000 },
      { code: "in_use_by_handoff", port: 20001, pids: [11, 12] },
      { code: "taken", port: 20002, holders: [{ pid: 21, name: "postgres" }] },
      { code: "taken", port: 20003, holders: [] },
      { code: "unknown", port: 20004, message: "it is in use, but lsof is not installed" },
    ]);
    expect(
      classify(
        facts(withPorts("running"), {
          ports: [{ port: 20000, answer: { free: false, inUse: false, reason: "no permission" } }],
        }),
      ).portChecks,
    ).toEqual([{ code: "unknown", port: 20000, message: "no permission" }]);
  });

  it("shows the ports in list only where some handoff holds them, and each check in inspect", () => {
    const held = classify(facts(withPorts("running")));
    const plain = { ...classify(facts(manifest("running"))), id: "20260101-100000-feat-y-abcd", branch: "feat/y" };
    const inventory = (handoffs: HandoffReport[]) => ({
      version: 1 as const,
      agentDir: "/a",
      generatedAt: LATER.toISOString(),
      handoffs,
      hiddenRemoved: 0,
      unreadable: [],
    });
    const table = formatInventory(inventory([held, plain])).split("\n");
    expect(table[0]).toMatch(/^ID +STATUS +CHILD +BRANCH +PORTS +FLAGS +ACTIONS$/);
    expect(table[1]).toContain(" 20000,20001,20002,20003,20004 ");
    expect(table[2]).toMatch(/ feat\/y +- +/);
    expect(formatInventory(inventory([plain]))).not.toContain("PORTS");

    expect(formatReport(held)).toContain("  ports:         20000, 20001, 20002, 20003, 20004\n");
    const checked = classify(
      facts(withPorts("running"), {
        ports: [
          { port: 20000, answer: { free: true } },
          { port: 20001, answer: inUse, listeners: [{ pid: 11, name: "node", handoffId: ID }] },
          { port: 20002, answer: inUse, listeners: [{ pid: 21, name: "nginx" }] },
          { port: 20003, answer: inUse, listeners: [] },
        ],
      }),
    );
    const lines = formatReport(checked)
      .split("\n")
      .filter((line) => line.startsWith("  port:"));
    expect(lines).toEqual([
      "  port:          20000 free",
      "  port:          20001 in use by this handoff (pid 11)",
      "  port:          20002 TAKEN by someone else (pid 21 nginx): its servers cannot listen there; stop that process, or hand off again for new ports",
      "  port:          20003 TAKEN by someone else (a process of another user): its servers cannot listen there; stop that process, or hand off again for new ports",
    ]);
  });
});

describe("list at the terminal's width", () => {
  // Two handoffs made minutes apart on the same day: their ids share a long start.
  const handoff = (id: string, branch: string): HandoffReport => ({
    ...classify(facts(manifest("running"), { workspace: { code: "closed" }, branch: unmerged })),
    id,
    branch,
  });
  const table = (width: number) =>
    formatInventory(
      {
        version: 1,
        agentDir: "/a",
        generatedAt: LATER.toISOString(),
        handoffs: [
          handoff("20261207-002005-cli-listed-b6e3", "feat/a-branch-name-long-enough-to-need-cutting"),
          handoff("20261207-002931-cli-listed-9f0a", "feat/short"),
        ],
        hiddenRemoved: 0,
        unreadable: [],
      },
      { width, forecast: new Map([["20261207-002005-cli-listed-b6e3", "conflicts 2"]]) },
    );

  it("keeps every id and every action whole, and cuts free text first", () => {
    expect(table(120).split("\n")).toEqual([
      "ID                               STATUS         CHILD   BRANCH         FLAGS           FORECAST     ACTIONS",
      "20261207-002005-cli-listed-b6e3  window close~  exited  feat/a-branc~  unpushed,unme~  conflicts 2  relaunch,land,remove",
      "20261207-002931-cli-listed-9f0a  window close~  exited  feat/short     unpushed,unme~  -            relaunch,land,remove",
    ]);
    // At 80 columns even the free text at its narrowest leaves no room: the rows are wider than
    // the terminal (which wraps them) rather than an id cut to a start many handoffs share.
    expect(table(80).split("\n")).toEqual([
      "ID                               STATUS    CHILD   BRANCH    FLAGS     FORECAST  ACTIONS",
      "20261207-002005-cli-listed-b6e3  window ~  exited  feat/a-~  unpushe~  conflic~  relaunch,land,remove",
      "20261207-002931-cli-listed-9f0a  window ~  exited  feat/sh~  unpushe~  -         relaunch,land,remove",
    ]);
  });
});
