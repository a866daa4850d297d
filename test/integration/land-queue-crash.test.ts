/**
 * `pi-handoff land --all` killed with SIGKILL at each of its points (`PI_HANDOFF_FAULT=kill-after:...`,
 * the real CLI as a real process, on real git): two children, feat/land that passes its check and
 * feat/d that fails it (so it is rebased, then moved back). After each kill, `land --all --status`
 * says the run was stopped and what git's refs say of the child it left mid-step, `inspect` says the
 * truth of its rebase or landing, and the queue's lock does not block the next run; that run takes
 * the stopped one up and finishes it: main holds feat/land's commit exactly once, feat/d is as it was
 * before the queue (branch, worktree, files), told once, and the parent told of the landing once.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ChildReportStore } from "../../src/manifest/child-reports.ts";
import { HandoffNoteStore } from "../../src/manifest/handoff-notes.ts";
import { createQueueDeps } from "../../src/cli/deps.ts";
import { queueLockId } from "../../src/queue/queue.ts";
import type { QueueStatus } from "../../src/queue/queue-status.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { runCli } from "../support/reliability.ts";

let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

const CHECK_SCRIPT = `#!/bin/sh
if grep -q broken ./*.txt; then echo "broken content found" >&2; exit 3; fi
echo "all good"
`;

type Verdict = QueueStatus["refs"][number]["verdict"]["code"];

/** Each point, the child the run stopped at, what --status says of it from the refs, and inspect's line. */
const CASES: {
  point: string;
  child: "a" | "d";
  verdict: Verdict | undefined;
  mainMoved: boolean;
  inspect?: RegExp;
}[] = [
  {
    point: "rebase-move",
    child: "a",
    verdict: "rebased_unchecked",
    mainMoved: false,
    inspect: /rebase: +interrupted after the branch moved: feat\/land is at the new tip/,
  },
  {
    point: "queue-rebased",
    child: "a",
    verdict: "rebased_unchecked",
    mainMoved: false,
    inspect: /rebase: +rebased 1 commit onto main/,
  },
  { point: "queue-checking", child: "a", verdict: "rebased_unchecked", mainMoved: false },
  {
    point: "land-intent",
    child: "a",
    verdict: "not_landed",
    mainMoved: false,
    inspect: /landing: +interrupted before the target moved/,
  },
  {
    point: "land-target",
    child: "a",
    verdict: "landed_unrecorded",
    mainMoved: true,
    inspect: /landing: +interrupted after the target moved: main is at the new commit/,
  },
  {
    point: "queue-landed",
    child: "a",
    verdict: "landed_unrecorded",
    mainMoved: true,
    inspect: /landing: +landed 1 commit into main by ff/,
  },
  { point: "queue-decided", child: "a", verdict: undefined, mainMoved: true },
  {
    point: "queue-undo-intent",
    child: "d",
    verdict: "not_moved_back",
    mainMoved: true,
    inspect: /rebase: +interrupted while pi-handoff land --all sent it back: feat\/d is still at the rebased tip/,
  },
  {
    point: "queue-undone",
    child: "d",
    verdict: "moved_back",
    mainMoved: true,
    inspect: /rebase: +interrupted while pi-handoff land --all sent it back: feat\/d is back at/,
  },
];

function filesOf(r: LandRig, worktree: string): Record<string, string> {
  const names = r.repo.run(["ls-files", "--cached", "--others"], { cwd: worktree }).split("\n").filter(Boolean);
  return Object.fromEntries(names.map((name) => [name, readFileSync(join(worktree, name), "utf8")]));
}

async function status(r: LandRig): Promise<QueueStatus> {
  const run = await runCli(["land", "--all", "--status", "--json"], r.env, r.repo.root);
  expect([run.status, run.stderr]).toEqual([0, ""]);
  return JSON.parse(run.stdout) as QueueStatus;
}

describe("land --all killed at each point", () => {
  for (const { point, child, verdict, mainMoved, inspect } of CASES) {
    it(`after kill-after:${point}, --status and inspect say the truth, and the next run finishes it, landing nothing twice`, async () => {
      const r = (rig = await createLandRig());
      const { repo } = r;
      const a = { id: r.id, branch: r.branch, worktree: r.worktree };
      const d = { branch: "feat/d", ...(await r.addHandoff("feat/d")) };
      r.commitInWorktree("a.txt", "a\n", "add a");
      const dTip = repo.commitFile("d.txt", "broken\n", "add d", { cwd: d.worktree });
      // main moves on after both left it: each is rebased before its check.
      const checkCommit = repo.commitFile("check.sh", CHECK_SCRIPT, "add the check");
      mkdirSync(join(repo.root, ".pi"), { recursive: true });
      writeFileSync(join(repo.root, ".pi", "handoff-worktree.json"), JSON.stringify({ check: ["sh", "check.sh"] }));
      const dFiles = filesOf(r, d.worktree);
      const land = ["land", "--all", "--approve-repo-code"];

      const killed = await runCli(land, { ...r.env, PI_HANDOFF_FAULT: `kill-after:${point}` }, repo.root);
      expect(killed.signal).toBe("SIGKILL");
      expect(repo.run(["rev-parse", "refs/heads/main"]) !== checkCommit).toBe(mainMoved);

      // --status: stopped (its holder is dead, so nothing runs), and the refs' word on the child left mid-step.
      const stopped = await status(r);
      expect(stopped.state).toBe("interrupted");
      expect(stopped.holder).toBeUndefined();
      const stoppedAt = child === "a" ? a : d;
      expect(stopped.refs.map((entry) => [entry.id, entry.verdict.code])).toEqual(
        verdict === undefined ? [] : [[stoppedAt.id, verdict]],
      );
      const said = await runCli(["land", "--all", "--status"], r.env, repo.root);
      expect(said.stdout.split("\n")[0]).toMatch(
        /^The last pi-handoff land --all \(process \d+, started [^)]+\) was stopped before it finished; pi-handoff land --all takes it up and finishes it\.$/,
      );
      if (inspect !== undefined) {
        const shown = await runCli(["inspect", stoppedAt.id], r.env, repo.root);
        expect(shown.status).toBe(0);
        expect(shown.stdout).toMatch(inspect);
      }
      // The dry run says the stopped run comes first, naming the child it left mid-step.
      const dry = await runCli(["land", "--all", "--dry-run"], r.env, repo.root);
      const open = verdict === undefined ? "" : `, settling ${stoppedAt.id} ${stoppedAt.branch} from git's refs`;
      expect(dry.stdout.split("\n")).toContain(
        `The last pi-handoff land --all was stopped before it finished; the next run takes it up first${open} (pi-handoff land --all --status says where each is).`,
      );
      // The dead holder's lock does not block: it is taken over.
      expect(await r.store.actionHolder(queueLockId(join(repo.root, ".git")))).toBeUndefined();

      const again = await runCli(land, r.env, repo.root);
      expect(again.status).toBe(1);
      const lines = again.stdout.split("\n");
      const mainTip = repo.run(["rev-parse", "refs/heads/main"]);
      expect(lines.slice(0, 4)).toEqual([
        "The last pi-handoff land --all was stopped before it finished; this run took it up and finished it.",
        "Landed (1):",
        `  ${a.id} feat/land: 1 commit into main, now at ${mainTip.slice(0, 12)} (check passed)`,
        "Sent back (1):",
      ]);
      expect(lines[4]).toMatch(
        new RegExp(
          `^  ${d.id} feat/d: on main's tip, the check exited with 3 \\(log: [^)]+\\)\\. feat/d was rebased for the check \\(to [0-9a-f]{12}\\) and moved back to ${dTip.slice(0, 12)}, where it was, with its worktree's files\\.$`,
        ),
      );

      // main holds feat/land's commit exactly once, on top of the check.
      expect(repo.run(["log", "--format=%s", `${checkCommit}..refs/heads/main`]).split("\n")).toEqual(["add a"]);
      expect(repo.run(["rev-parse", "refs/heads/main^"])).toBe(checkCommit);
      // The main checkout followed main, never half-merged (the settings file is its own, untracked).
      expect(repo.run(["status", "--porcelain", "--untracked-files=all"])).toBe("?? .pi/handoff-worktree.json");
      expect(readFileSync(join(repo.root, "a.txt"), "utf8")).toBe("a\n");
      // feat/d as before the queue: branch, worktree HEAD, files, nothing uncommitted; its rebase undone.
      expect(repo.run(["rev-parse", `refs/heads/${d.branch}`])).toBe(dTip);
      expect(repo.run(["rev-parse", "HEAD"], { cwd: d.worktree })).toBe(dTip);
      expect(repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: d.worktree })).toBe("");
      expect(filesOf(r, d.worktree)).toEqual(dFiles);
      const dRead = await r.store.read(d.id);
      if (!dRead.ok) throw new Error(dRead.message);
      expect(dRead.manifest.rebases?.at(-1)).toMatchObject({ state: "undone", from: dTip });
      // Told once each: feat/d's note of being sent back, the parent's notice of the landing.
      const notes = (await HandoffNoteStore.forAgentDir(r.agentDir).list(d.id)).notes;
      expect(notes.filter((note) => note.kind === "sent_back").length).toBe(1);
      const reports = (await ChildReportStore.forAgentDir(r.agentDir).list(a.id)).reports;
      expect(reports.map((report) => [report.kind, report.landing?.result])).toEqual([["landed", mainTip]]);
      const aRead = await r.store.read(a.id);
      if (!aRead.ok) throw new Error(aRead.message);
      expect(aRead.manifest.landings?.at(-1)).toMatchObject({ state: "landed", to: mainTip });

      const finished = await status(r);
      expect([finished.state, finished.refs]).toEqual(["finished", []]);
      expect(finished.journal?.members.map((member) => [member.id, member.step, member.outcome?.code])).toEqual([
        [a.id, "done", "landed"],
        [d.id, "done", "sent_back"],
      ]);
    });
  }

  it("after kill-after:queue-decided on a child sent back, the next run tells it exactly once", async () => {
    const r = (rig = await createLandRig());
    const { repo } = r;
    const d = { branch: "feat/d", ...(await r.addHandoff("feat/d")) };
    const dTip = repo.commitFile("d.txt", "broken\n", "add d", { cwd: d.worktree });
    repo.commitFile("check.sh", CHECK_SCRIPT, "add the check");
    mkdirSync(join(repo.root, ".pi"), { recursive: true });
    writeFileSync(join(repo.root, ".pi", "handoff-worktree.json"), JSON.stringify({ check: ["sh", "check.sh"] }));
    // feat/land has nothing to land: the queue of these two is feat/d alone.
    const land = ["land", d.id, r.id, "--approve-repo-code"];
    const killed = await runCli(land, { ...r.env, PI_HANDOFF_FAULT: "kill-after:queue-decided" }, repo.root);
    expect(killed.signal).toBe("SIGKILL");
    const notes = HandoffNoteStore.forAgentDir(r.agentDir);
    expect((await notes.list(d.id)).notes.filter((note) => note.kind === "sent_back")).toEqual([]);
    const stopped = await status(r);
    expect(stopped.journal?.members.map((member) => [member.id, member.step, member.outcome?.code])).toEqual([
      [d.id, "telling", "sent_back"],
    ]);
    expect(repo.run(["rev-parse", `refs/heads/${d.branch}`])).toBe(dTip);

    const again = await runCli(land, r.env, repo.root);
    expect([again.status, again.stdout.split("\n").slice(0, 3)]).toEqual([
      1,
      [
        "The last pi-handoff land --all was stopped before it finished; this run took it up and finished it.",
        "Landed (0):",
        "Sent back (1):",
      ],
    ]);
    const sent = (await notes.list(d.id)).notes.filter((note) => note.kind === "sent_back");
    expect(sent.map((note) => note.sentBack?.tip)).toEqual([dTip]);
    // A third run is a new one: it takes feat/d again (nothing was fixed) and tells it again, as a new note.
    const third = await runCli(land, r.env, repo.root);
    expect(third.stdout.split("\n")[0]).toBe("Landed (0):");
    expect((await notes.list(d.id)).notes.filter((note) => note.kind === "sent_back").length).toBe(2);
  });

  it("a child the stopped run had not started yet waits when it is no longer ready; --status says a run that holds the lock runs", async () => {
    const r = (rig = await createLandRig());
    const { repo } = r;
    const b = { branch: "feat/b", ...(await r.addHandoff("feat/b")) };
    r.commitInWorktree("a.txt", "a\n", "add a");
    const bTip = repo.commitFile("b.txt", "b\n", "add b", { cwd: b.worktree });
    const land = ["land", "--all"];
    const killed = await runCli(land, { ...r.env, PI_HANDOFF_FAULT: "kill-after:queue-decided" }, repo.root);
    expect(killed.signal).toBe("SIGKILL");
    const aTip = repo.run(["rev-parse", "refs/heads/main"]);
    // Meanwhile feat/b's Pi left uncommitted work: it is not taken, not touched.
    writeFileSync(join(b.worktree, "wip.txt"), "wip\n");
    const again = await runCli(land, r.env, repo.root);
    expect([again.status, again.stdout]).toEqual([
      0,
      [
        "The last pi-handoff land --all was stopped before it finished; this run took it up and finished it.",
        "Landed (1):",
        `  ${r.id} feat/land: 1 commit into main, now at ${aTip.slice(0, 12)} (no check set)`,
        "Sent back (0):",
        "Waiting (1):",
        `  ${b.id} feat/b: uncommitted changes (wip.txt)`,
        "",
      ].join("\n"),
    ]);
    expect(repo.run(["rev-parse", `refs/heads/${b.branch}`])).toBe(bTip);
    expect(repo.run(["rev-parse", "refs/heads/main"])).toBe(aTip);

    // A run that holds the queue's lock runs, even before its journal says so.
    const deps = createQueueDeps(r.env);
    const held = await deps.store.withActionLock(queueLockId(join(repo.root, ".git")), "queue", () =>
      runCli(["land", "--all", "--status", "--json"], r.env, repo.root),
    );
    if ("ok" in held) throw new Error("the test could not take the queue's lock");
    const running = JSON.parse(held.stdout) as QueueStatus;
    expect([running.state, running.holder?.pid]).toEqual(["running", process.pid]);
  });
});
