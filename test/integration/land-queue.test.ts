/**
 * `pi-handoff land --all` on real git (issue 44): four children of one repository, two
 * independent, one that conflicts with a sibling once that sibling landed, one whose check fails
 * (the repository's check, approved through the approval API). The expected report exactly, the
 * failing and conflicting children's branches, worktrees and files as they were, a note for each,
 * and main holding exactly the two others' commits.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadHandoffConfig } from "../../src/config/load.ts";
import { approvePostCreate, approvedCheck } from "../../src/config/post-create-approval.ts";
import { HandoffNoteStore } from "../../src/manifest/handoff-notes.ts";
import { createQueueDeps } from "../../src/cli/deps.ts";
import { planQueue, queueLockId, runQueue, type QueueCheck } from "../../src/queue/queue.ts";
import { describeQueuePlan, describeQueueReport } from "../../src/queue/queue-words.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";
import { NODE_BIN } from "../support/pi.ts";
import { PI_HANDOFF_BIN, runCli } from "../support/reliability.ts";

let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

const CHECK_SCRIPT = `#!/bin/sh
if grep -q broken ./*.txt; then
  i=1
  while [ $i -le 25 ]; do echo "check line $i"; i=$((i + 1)); done
  echo "broken content found" >&2
  exit 3
fi
echo "all good"
`;

/** Every file of a worktree (but .git), with its content. */
function filesOf(r: LandRig, worktree: string): Record<string, string> {
  const names = r.repo.run(["ls-files", "--cached", "--others"], { cwd: worktree }).split("\n").filter(Boolean);
  return Object.fromEntries(names.map((name) => [name, readFileSync(join(worktree, name), "utf8")]));
}

describe("pi-handoff land --all (the local merge queue)", () => {
  it("lands the two that pass, sends back the conflicting and the failing child intact and told, and says why", async () => {
    const r = (rig = await createLandRig());
    const { repo } = r;
    const a = { id: r.id, branch: r.branch, worktree: r.worktree };
    // main moves on (the check script) after feat/land left it: feat/land needs a rebase.
    const checkCommit = repo.commitFile("check.sh", CHECK_SCRIPT, "add the check");
    const b = { branch: "feat/b", ...(await r.addHandoff("feat/b")) };
    const c = { branch: "feat/c", ...(await r.addHandoff("feat/c")) };
    const d = { branch: "feat/d", ...(await r.addHandoff("feat/d")) };
    const idle = { branch: "feat/idle", ...(await r.addHandoff("feat/idle")) };
    r.commitInWorktree("shared.txt", "from a\n", "add a");
    const bTip = repo.commitFile("b.txt", "b\n", "add b", { cwd: b.worktree });
    const cTip = repo.commitFile("shared.txt", "from c\n", "add c", { cwd: c.worktree });
    const dTip = repo.commitFile("d.txt", "broken\n", "add d", { cwd: d.worktree });
    const cFiles = filesOf(r, c.worktree);
    const dFiles = filesOf(r, d.worktree);

    // The repository's check is code: it runs only once approved (the same approval as postCreate).
    mkdirSync(join(repo.root, ".pi"), { recursive: true });
    const settingsFile = join(repo.root, ".pi", "handoff-worktree.json");
    writeFileSync(settingsFile, JSON.stringify({ check: ["sh", "check.sh"], checkTimeoutMs: 60_000 }));
    const loaded = await loadHandoffConfig({ cwd: repo.root, agentDir: r.agentDir, projectTrusted: true });
    if (!loaded.ok) throw new Error(loaded.message);
    const asked = { agentDir: r.agentDir, config: loaded.config, repoNeedsApproval: loaded.repoNeedsApproval };
    expect(await approvedCheck({ ...asked, approvedByFlag: false })).toEqual({
      ok: false,
      message: `The check in ${settingsFile} (["sh","check.sh"]) has not been approved yet; review it and add --approve-repo-code, or approve the repository's code once in Pi's TUI; nothing was landed.`,
    });
    await approvePostCreate(r.agentDir, settingsFile, [], new Date(), undefined, ["sh", "check.sh"]);
    expect(await approvedCheck({ ...asked, approvedByFlag: false })).toEqual({ ok: true, check: ["sh", "check.sh"] });
    const check: QueueCheck = { command: ["sh", "check.sh"], timeoutMs: 60_000, env: r.env };

    const deps = createQueueDeps(r.env);
    const repoCommonDir = join(repo.root, ".git");
    // The dry run: the order (no predicted clash first, then by creation), the strategies, the check.
    const plan = await planQueue(deps, { repoCommonDir });
    const before = r.snapshot();
    expect(describeQueuePlan(plan, check, '["sh","check.sh"]')).toEqual([
      "Dry run, nothing changed. Would land 4 handoffs, in this order:",
      `  1. ${b.id} feat/b (1 commit): fast-forward main`,
      `  2. ${d.id} feat/d (1 commit): rebase onto main's tip (after those before it), then fast-forward main`,
      `  3. ${a.id} feat/land (1 commit): rebase onto main's tip (after those before it), then fast-forward main; forecast: clashes with ${c.id}`,
      `  4. ${c.id} feat/c (1 commit): rebase onto main's tip (after those before it), then fast-forward main; forecast: clashes with ${a.id}`,
      `Check, in each child's worktree before it lands (at most 60 s): ["sh","check.sh"]`,
      "Waiting (1):",
      `  ${idle.id} feat/idle: nothing to land`,
    ]);
    expect(r.snapshot()).toEqual(before);

    const outcome = await runQueue(deps, { repoCommonDir, check, keepRebased: false });
    if (!outcome.ok) throw new Error(outcome.message);
    const { report } = outcome;
    const mainTip = repo.run(["rev-parse", "refs/heads/main"]);
    const sentD = report.sentBack[0];
    if (sentD?.reason.code !== "check_failed" || sentD.after.code !== "restored")
      throw new Error("feat/d was not sent back for its check");
    const log = sentD.reason.check.log;
    const dRebased = sentD.after.rebasedTo;
    expect(describeQueueReport(report)).toEqual([
      "Landed (2):",
      `  ${b.id} feat/b: 1 commit into main, now at ${bTip.slice(0, 12)} (check passed)`,
      `  ${a.id} feat/land: 1 commit into main, now at ${mainTip.slice(0, 12)} (check passed)`,
      "Sent back (2):",
      `  ${d.id} feat/d: on main's tip, the check exited with 3 (log: ${log}). feat/d was rebased for the check (to ${dRebased.slice(0, 12)}) and moved back to ${dTip.slice(0, 12)}, where it was, with its worktree's files.`,
      "    Its Pi is told at its next idle point.",
      `  ${c.id} feat/c: rebasing it onto main would conflict in shared.txt. feat/c and its worktree were not changed (feat/c is at ${cTip.slice(0, 12)}).`,
      "    Its Pi is told at its next idle point.",
      "Waiting (1):",
      `  ${idle.id} feat/idle: nothing to land`,
    ]);
    // D was checked on main's tip with B in it.
    expect(repo.run(["rev-parse", `${dRebased}^`])).toBe(bTip);
    expect(log.startsWith(join(r.agentDir, "handoff-worktree", "checks", d.id, ""))).toBe(true);
    const output = `${Array.from({ length: 25 }, (_, i) => `check line ${i + 1}\n`).join("")}broken content found\n`;
    expect(readFileSync(log, "utf8")).toBe(output);

    // main holds exactly B's and A's commits on top of the check, and its checkout has their files.
    expect(repo.run(["log", "--format=%s", `${checkCommit}..refs/heads/main`]).split("\n")).toEqual(["add a", "add b"]);
    expect(repo.run(["rev-parse", `${mainTip}^`])).toBe(bTip);
    expect(readFileSync(join(repo.root, "shared.txt"), "utf8")).toBe("from a\n");
    // The failing and the conflicting children: branch, worktree and files as before the queue.
    for (const [child, tip, files] of [
      [c, cTip, cFiles],
      [d, dTip, dFiles],
    ] as const) {
      expect(repo.run(["rev-parse", `refs/heads/${child.branch}`])).toBe(tip);
      expect(repo.run(["rev-parse", "HEAD"], { cwd: child.worktree })).toBe(tip);
      expect(repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: child.worktree })).toBe("");
      expect(filesOf(r, child.worktree)).toEqual(files);
    }
    // Each is told once, with why, the check's last 20 lines and the log.
    const notes = HandoffNoteStore.forAgentDir(r.agentDir);
    const cNotes = (await notes.list(c.id)).notes;
    expect(cNotes.map((note) => [note.kind, note.text])).toEqual([
      [
        "sent_back",
        [
          "pi-handoff land --all did not land feat/c into main: rebasing it onto main would conflict in shared.txt.",
          `feat/c and its worktree were not changed (feat/c is at ${cTip.slice(0, 12)}).`,
          "Fix it here and commit; the next pi-handoff land --all takes it again.",
        ].join("\n"),
      ],
    ]);
    const dNotes = (await notes.list(d.id)).notes;
    expect(dNotes.map((note) => note.kind)).toEqual(["rebased", "sent_back"]);
    expect(dNotes[1]?.text).toBe(
      [
        "pi-handoff land --all did not land feat/d into main: on main's tip, the check exited with 3.",
        `feat/d was rebased for the check (to ${dRebased.slice(0, 12)}) and moved back to ${dTip.slice(0, 12)}, where it was, with its worktree's files.`,
        "A note that the branch was rebased, if one came just before, no longer holds.",
        `The check's last 20 lines (the whole output: ${log}):`,
        ...Array.from({ length: 19 }, (_, i) => `  check line ${i + 7}`),
        "  broken content found",
        "Fix it here and commit; the next pi-handoff land --all takes it again.",
      ].join("\n"),
    );
    expect(dNotes[1]).toMatchObject({ sentBack: { reason: "check_failed", into: "main", tip: dTip, log } });
    // Its manifest says the rebase was undone, and inspect says where the branch is.
    const dRead = await r.store.read(d.id);
    if (!dRead.ok) throw new Error(dRead.message);
    expect(dRead.manifest.rebases?.map((rebase) => [rebase.state, rebase.from, rebase.to])).toEqual([
      ["undone", dTip, dRebased],
    ]);
    const inspected = await runCli(["inspect", d.id], r.env, repo.root);
    expect(inspected.stdout.split("\n").filter((line) => line.startsWith("  rebase:"))).toEqual([
      `  rebase:        undone (1 commit onto main at ${bTip.slice(0, 12)}, ${dTip.slice(0, 12)} -> ${dRebased.slice(0, 12)}): pi-handoff land --all sent it back and moved feat/d back to ${dTip.slice(0, 12)}`,
    ]);
    // The queue's lock is released: nothing of it is left in the store.
    expect(await deps.store.actionHolder(queueLockId(repoCommonDir))).toBeUndefined();
  });

  it("from the shell: a repository's check runs only once approved, the queue is one per repository, exit 1 when one was sent back", async () => {
    const r = (rig = await createLandRig());
    const { repo } = r;
    const checkCommit = repo.commitFile("check.sh", CHECK_SCRIPT, "add the check");
    const bad = { branch: "feat/bad", ...(await r.addHandoff("feat/bad")) };
    const good = r.commitInWorktree("good.txt", "good\n", "add good");
    const badTip = repo.commitFile("bad.txt", "broken\n", "add bad", { cwd: bad.worktree });
    mkdirSync(join(repo.root, ".pi"), { recursive: true });
    const settingsFile = join(repo.root, ".pi", "handoff-worktree.json");
    writeFileSync(settingsFile, JSON.stringify({ check: "sh check.sh" }));
    const before = r.snapshot();
    const unapproved = `The check in ${settingsFile} (sh check.sh) has not been approved yet; review it and add --approve-repo-code, or approve the repository's code once in Pi's TUI`;

    const refused = await runCli(["land", "--all"], r.env, repo.root);
    expect([refused.status, refused.stdout, refused.stderr]).toEqual([
      1,
      "",
      `pi-handoff land: ${unapproved}; nothing was landed.\n`,
    ]);
    const dry = await runCli(["land", "--all", "--dry-run"], r.env, repo.root);
    expect([dry.status, dry.stderr]).toEqual([0, ""]);
    expect(dry.stdout.split("\n").slice(-3)).toEqual([
      "Check, in each child's worktree before it lands (at most 600 s): sh check.sh",
      `${unapproved}.`,
      "",
    ]);
    const mixed = await runCli(["land", r.id, "--keep-rebased"], r.env, repo.root);
    expect([mixed.status, mixed.stderr]).toEqual([
      2,
      "pi-handoff land: --keep-rebased goes with the queue: land --all, or land with several handoffs (see pi-handoff --help).\n",
    ]);
    expect(r.snapshot()).toEqual(before);

    // Another queue of this repository runs: this one refuses at once, changing nothing.
    const deps = createQueueDeps(r.env);
    const lockId = queueLockId(join(repo.root, ".git"));
    const busy = await deps.store.withActionLock(lockId, "queue", () =>
      runCli(["land", "--all", "--approve-repo-code"], r.env, repo.root),
    );
    if ("ok" in busy) throw new Error("the test could not take the queue's lock");
    expect(busy.status).toBe(1);
    expect(busy.stderr).toMatch(
      new RegExp(
        `^pi-handoff land: Another pi-handoff land --all of this repository runs \\(process ${process.pid}, since [^)]+\\); nothing was landed\\. Let it finish, then run it again\\.\\n$`,
      ),
    );
    expect(r.snapshot()).toEqual(before);

    const ran = await runCli(["land", r.id, bad.id, "--approve-repo-code"], r.env, repo.root);
    expect(ran.status).toBe(1);
    expect(ran.stdout.split("\n").slice(0, 3)).toEqual([
      "Landed (1):",
      `  ${r.id} feat/land: 1 commit into main, now at ${repo.run(["rev-parse", "refs/heads/main"]).slice(0, 12)} (check passed)`,
      "Sent back (1):",
    ]);
    expect(repo.run(["log", "-1", "--format=%s", "refs/heads/main"])).toBe("add good");
    // feat/land was rebased onto the check's commit, its commit re-made there.
    expect(repo.run(["rev-parse", "refs/heads/main^"])).toBe(checkCommit);
    expect(repo.run(["rev-parse", "refs/heads/main"])).not.toBe(good);
    expect(repo.run(["rev-parse", `refs/heads/${bad.branch}`])).toBe(badTip);
    // The approval is remembered: the next run needs no flag (and sends feat/bad back again).
    const again = await runCli(["land", "--all"], r.env, repo.root);
    expect([again.status, again.stdout.split("\n")[0]]).toEqual([1, "Landed (0):"]);
  });

  it("holds each member's action lock while it works on it, skips a member another command holds, and keeps the rebase when asked", async () => {
    const r = (rig = await createLandRig());
    const { repo } = r;
    r.commitInWorktree("a.txt", "a\n", "add a");
    const b = { branch: "feat/b", ...(await r.addHandoff("feat/b")) };
    const bTip = repo.commitFile("b.txt", "b\n", "add b", { cwd: b.worktree });
    const mainTip = repo.commitFile("m.txt", "m\n", "main moves");
    const deps = createQueueDeps(r.env);
    // The check tries a rebase of the very child being checked: its action lock is the queue's now.
    const check: QueueCheck = {
      command: [NODE_BIN, PI_HANDOFF_BIN, "rebase", b.id, "--dry-run"],
      timeoutMs: 60_000,
      env: r.env,
    };
    const request = { repoCommonDir: join(repo.root, ".git"), ids: [r.id, b.id], check, keepRebased: true };
    // Meanwhile another command acts on feat/land.
    const outcome = await deps.store.withActionLock(r.id, "remove", () => runQueue(deps, request));
    if ("code" in outcome || !outcome.ok) throw new Error("the queue did not run");
    const { report } = outcome;
    expect(report.landed).toEqual([]);
    expect(report.waiting).toEqual([
      {
        code: "waiting",
        id: r.id,
        branch: r.branch,
        reason: {
          code: "busy",
          message: expect.stringMatching(
            new RegExp(`^Handoff ${r.id} is busy: process ${process.pid} is removing it `),
          ),
        },
      },
    ]);
    const sent = report.sentBack[0];
    if (sent?.reason.code !== "check_failed" || sent.after.code !== "kept_rebased")
      throw new Error("feat/b was not kept rebased");
    expect(readFileSync(sent.reason.check.log, "utf8")).toMatch(
      new RegExp(
        `^pi-handoff rebase: Handoff ${b.id} is busy: process \\d+ is landing it \\(since [^)]+\\); nothing was done, try again once it has finished\\.\\n$`,
      ),
    );
    // Kept rebased: on main's tip, its worktree with main's file, nothing uncommitted; feat/land untouched.
    const rebased = repo.run(["rev-parse", `refs/heads/${b.branch}`]);
    expect(sent.after).toEqual({ code: "kept_rebased", tip: rebased, before: bTip });
    expect(repo.run(["rev-parse", `${rebased}^`])).toBe(mainTip);
    expect(readFileSync(join(b.worktree, "m.txt"), "utf8")).toBe("m\n");
    expect(repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: b.worktree })).toBe("");
    expect(repo.run(["rev-parse", "refs/heads/main"])).toBe(mainTip);
    const notes = (await HandoffNoteStore.forAgentDir(r.agentDir).list(b.id)).notes;
    expect(notes.at(-1)?.text.split("\n").slice(0, 2)).toEqual([
      "pi-handoff land --all did not land feat/b into main: on main's tip, the check exited with 1.",
      `feat/b stays rebased at ${rebased.slice(0, 12)} (--keep-rebased; it was at ${bTip.slice(0, 12)}).`,
    ]);
  });

  it("lands only the tip it checked: a commit made during the check waits for the next run", async () => {
    const r = (rig = await createLandRig());
    const { repo } = r;
    const checked = r.commitInWorktree("a.txt", "a\n", "add a");
    const mainTip = repo.run(["rev-parse", "refs/heads/main"]);
    const deps = createQueueDeps(r.env);
    await r.store.update(r.id, (manifest) => {
      manifest.env = { GREETING: "hello from the handoff's env" };
    });
    // The child's Pi commits while the check runs (which has the handoff's variables, as its Pi had).
    const check: QueueCheck = {
      command: 'echo "$GREETING" > late.txt && git add late.txt && git commit -q -m late',
      timeoutMs: 60_000,
      env: r.env,
    };
    const outcome = await runQueue(deps, { repoCommonDir: join(repo.root, ".git"), check, keepRebased: false });
    if (!outcome.ok) throw new Error(outcome.message);
    const late = repo.run(["rev-parse", `refs/heads/${r.branch}`]);
    expect(repo.run(["rev-parse", `${late}^`])).toBe(checked);
    expect(repo.run(["show", `${late}:late.txt`])).toBe("hello from the handoff's env");
    expect(outcome.report).toEqual({
      landed: [],
      sentBack: [],
      waiting: [
        {
          code: "waiting",
          id: r.id,
          branch: r.branch,
          reason: {
            code: "not_ready",
            message: `${r.branch} moved on from ${checked.slice(0, 12)} during its check; it was not landed.`,
          },
        },
      ],
    });
    expect(repo.run(["rev-parse", "refs/heads/main"])).toBe(mainTip);
  });

  it("stops before touching anything when git has no identity to make the rebased commits with", async () => {
    // A fresh machine: every child after the first would be rebased, git would refuse each commit,
    // and each child would be sent back (and told) for this machine's setting.
    const r = (rig = await createLandRig());
    const { repo } = r;
    const b = await r.addHandoff("feat/b");
    r.commitInWorktree("a.txt", "a\n", "add a");
    repo.commitFile("b.txt", "b\n", "add b", { cwd: b.worktree });
    repo.run(["config", "--unset", "user.name"]);
    repo.run(["config", "--unset", "user.email"]);
    repo.run(["config", "user.useConfigOnly", "true"]);
    const env = Object.fromEntries(Object.entries(r.env).filter(([key]) => !/^GIT_(AUTHOR|COMMITTER)_/.test(key)));
    const deps = createQueueDeps(env);
    const repoCommonDir = join(repo.root, ".git");
    const sentence = `git has no identity to make the rebased commits with in ${repo.root} (no email was given and auto-detection is disabled); set one (git config --global user.name "Your Name", git config --global user.email you@example.com), then run pi-handoff land --all again`;
    const plan = await planQueue(deps, { repoCommonDir });
    expect(describeQueuePlan(plan, undefined, "").at(-1)).toBe(
      `The run would stop before landing anything: ${sentence}.`,
    );
    const before = r.snapshot();
    expect(await runQueue(deps, { repoCommonDir, keepRebased: false })).toEqual({
      ok: false,
      code: "no_identity",
      message: `${sentence}; nothing was landed.`,
    });
    expect(r.snapshot()).toEqual(before);
    expect((await HandoffNoteStore.forAgentDir(r.agentDir).list(b.id)).notes).toEqual([]);
  });
});
