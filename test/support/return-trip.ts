/**
 * The return trip end to end, written once and run on each backend (tmux, the Herdr double) with
 * the real Pi: the parent hands off; commits are made in the child's worktree; the parent's widget
 * shows the child idle; the child's `/handoff-report` arrives once in the parent conversation;
 * `/handoffs land <id> --remove` typed in the parent lands the exact commits on the parent's
 * branch, retires the worktree, keeps the branch, and the parent hears one message naming them.
 * And restart safety: a report sent while the parent is closed is delivered exactly once when it
 * starts again. And a moving base: main moves on, the widget says by how much, `/handoffs rebase`
 * re-makes the child's commit on main's tip, and the child hears it once in its conversation.
 */
import { existsSync, readFileSync } from "node:fs";
import { expect } from "vitest";
import { ManifestStore } from "../../src/manifest/store.ts";
import { REPORT_MESSAGE_TYPE } from "../../src/adoption/reports.ts";
import { NOTE_MESSAGE_TYPE } from "../../src/session/message-types.ts";
import type { TempRepo } from "./git-repo.ts";
import { handOffUnfocused } from "./handoff-scenario.ts";
import { FAUX_MODEL, onlySessionFile, piTuiCommand, readEntries, runPiPrint, type PiSandbox } from "./pi.ts";
import type { MuxRig } from "./mux-rig.ts";
import { isProcessAlive } from "./recovery-rig.ts";
import { piProcessesIn } from "./recovery-ladder.ts";
import { waitFor } from "./tmux.ts";
import { entriesOnly, PI_READY, submitLine, waitForScreen, type PaneDriver } from "./tui.ts";

/** The widget and report poll of the parent, short for the tests (the default is 2 s). */
export const WATCH_POLL_ENV = { PI_HANDOFF_WATCH_POLL_MS: "200" };

/** A repository and Pi sandbox on one backend's rig (test/support/mux-rig.ts). */
export interface ReturnTripWorld extends Pick<MuxRig, "parentPane" | "runInParentPane" | "childPane"> {
  sandbox: PiSandbox;
  repo: TempRepo;
}

interface ReportMessage {
  content: string;
  /** Whether Pi shows it (false: for the model alone). */
  display: boolean;
  details: { kind: string; reportId: string; commits: string[] };
}

/** The report messages in a session file, in order. */
export function reportMessages(sessionFile: string): ReportMessage[] {
  return entriesOnly(readEntries(sessionFile)).flatMap((entry) =>
    entry.type === "custom_message" && entry.customType === REPORT_MESSAGE_TYPE
      ? [
          {
            content: String(entry.content),
            display: entry.display !== false,
            details: entry.details as ReportMessage["details"],
          },
        ]
      : [],
  );
}

/** Starts the parent Pi in its pane (the shell stays, so it can be started again); returns its pid. */
export async function startParent(world: ReturnTripWorld, sessionFile: string): Promise<number> {
  await world.runInParentPane(piTuiCommand(world.repo.root, ["--session", sessionFile], { keepShell: true }));
  await waitForScreen(world.parentPane, PI_READY, "the parent TUI");
  return waitFor(() => piProcessesIn(world.repo.root).filter(isProcessAlive)[0], {
    timeoutMs: 10_000,
    description: "the parent Pi's process",
  });
}

/** Types /quit and waits until that Pi's process is gone. */
export async function quit(pane: PaneDriver, pid: number | undefined, what: string): Promise<void> {
  if (pid === undefined) throw new Error(`No pid for ${what}.`);
  await pane.type("/quit");
  await waitFor(
    async () => {
      if (!isProcessAlive(pid)) return true;
      await pane.enter();
      return undefined;
    },
    { timeoutMs: 20_000, intervalMs: 500, description: `${what} (pid ${pid}) to quit` },
  );
}

/** The first session: hand off, commit, watch, hear back, land with --remove. */
export async function runReturnTrip(world: ReturnTripWorld): Promise<void> {
  const { repo, sandbox } = world;
  runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
  const parentFile = onlySessionFile(sandbox, repo.root);
  const parentPid = await startParent(world, parentFile);
  const manifest = await handOffUnfocused(world.parentPane, sandbox.agentDir, "feat/trip");
  const worktree = manifest.worktree.path;
  const child = world.childPane(manifest);
  await waitForScreen(child, PI_READY, "the child TUI");

  // Commits made in the child's worktree.
  const first = repo.commitFile("trip-1.txt", "one\n", "trip: first", { cwd: worktree });
  const second = repo.commitFile("trip-2.txt", "two\n", "trip: second", { cwd: worktree });

  // The parent's widget shows the child idle (its Pi runs, no turn in progress).
  await waitForScreen(world.parentPane, /handoff feat\/trip +idle \d+[smhd]/, "the widget showing the child idle");

  // The child's report arrives once in the parent conversation.
  await submitLine(
    child,
    "/handoff-report wrote trip-1 and trip-2; nothing left",
    /Report sent to the parent session \(2 commits on feat\/trip\)/,
  );
  await waitForScreen(world.parentPane, /Report from handoff feat\/trip/, "the report in the parent");
  const reported = await waitFor(
    () => {
      const messages = reportMessages(parentFile);
      return messages.length > 0 ? messages : undefined;
    },
    { timeoutMs: 20_000, description: "the report in the parent session file" },
  );
  expect(reported).toHaveLength(1);
  expect(reported[0]?.details).toMatchObject({ kind: "report", commits: [first, second] });
  expect(reported[0]?.content).toContain("wrote trip-1 and trip-2; nothing left");
  expect(reported[0]?.content).toContain(`${first.slice(0, 12)} trip: first`);

  // The child's Pi quits (a worktree is never removed under a live Pi); the widget follows.
  await quit(child, manifest.child.pid, "the child Pi");
  await waitForScreen(world.parentPane, /handoff feat\/trip +exited/, "the widget showing the child exited");

  // Land with --remove from the parent: exact SHAs on the parent's branch, worktree gone, branch kept.
  const mainBefore = repo.run(["rev-parse", "main"]);
  await submitLine(
    world.parentPane,
    `/handoffs land ${manifest.id} --remove`,
    /Landed 2 commits of feat\/trip into main \(ff\)/,
    60_000,
  );
  expect(repo.run(["rev-parse", "main"])).toBe(second);
  expect(repo.run(["rev-list", "--reverse", `${mainBefore}..main`]).split("\n")).toEqual([first, second]);
  expect(readFileSync(`${repo.root}/trip-2.txt`, "utf8")).toBe("two\n");
  expect(repo.run(["status", "--porcelain"])).toBe("");
  expect(repo.run(["rev-parse", "refs/heads/feat/trip"])).toBe(second);
  expect(existsSync(worktree)).toBe(false);
  const after = await ManifestStore.forAgentDir(sandbox.agentDir).read(manifest.id);
  if (!after.ok) throw new Error(after.message);
  expect(after.manifest.state).toBe("removed");
  expect(
    after.manifest.landings?.map((landing) => [landing.state, landing.strategy, landing.from, landing.to]),
  ).toEqual([["landed", "ff", mainBefore, second]]);

  // The parent hears one message naming the commits.
  const landed = await waitFor(
    () => {
      const messages = reportMessages(parentFile).filter((message) => message.details.kind === "landed");
      return messages.length > 0 ? messages : undefined;
    },
    { timeoutMs: 20_000, description: "the landing notice in the parent session file" },
  );
  expect(landed).toHaveLength(1);
  // Landed from this Pi's own /handoffs: the command's notice said it on screen; the message is for the
  // model alone, so the landing is shown once (issue 41, point 12).
  expect(landed[0]?.display).toBe(false);
  expect(await world.parentPane.read()).not.toMatch(/was landed into main/);
  expect(landed[0]?.details.commits).toEqual([first, second]);
  expect(landed[0]?.content).toContain(`${first.slice(0, 12)} trip: first`);
  expect(landed[0]?.content).toContain(`${second.slice(0, 12)} trip: second`);
  // Nothing was delivered twice while the parent kept polling.
  await waitForScreen(world.parentPane, /handoff feat\/trip +removed/, "the widget showing the handoff removed");
  expect(reportMessages(parentFile).map((message) => message.details.kind)).toEqual(["report", "landed"]);
  await quit(world.parentPane, parentPid, "the parent Pi");
}

/** A report sent while the parent is closed is delivered once when it starts again, and never again. */
export async function runReportWhileParentClosed(world: ReturnTripWorld): Promise<void> {
  const { repo, sandbox } = world;
  const parentFile = onlySessionFile(sandbox, repo.root);
  const firstPid = await startParent(world, parentFile);
  const manifest = await handOffUnfocused(world.parentPane, sandbox.agentDir, "feat/closed");
  const child = world.childPane(manifest);
  await waitForScreen(child, PI_READY, "the child TUI");
  const before = reportMessages(parentFile).length;

  await quit(world.parentPane, firstPid, "the parent Pi");
  await submitLine(child, "/handoff-report sent while the parent was closed", /Report sent to the parent session/);
  expect(reportMessages(parentFile)).toHaveLength(before);

  const secondPid = await startParent(world, parentFile);
  await waitForScreen(world.parentPane, /Report from handoff feat\/closed/, "the late report in the restarted parent");
  await waitFor(() => reportMessages(parentFile).length > before, {
    timeoutMs: 20_000,
    description: "the late report on disk",
  });
  await quit(world.parentPane, secondPid, "the parent Pi");

  // Once more: the ledger in the parent's session keeps it from coming twice. The widget shows
  // after the first refresh; a few more refreshes give a second delivery every chance to happen.
  const thirdPid = await startParent(world, parentFile);
  await waitForScreen(world.parentPane, /handoff feat\/closed +idle/, "the widget after the second restart");
  await new Promise((resolve) => setTimeout(resolve, 5 * Number(WATCH_POLL_ENV.PI_HANDOFF_WATCH_POLL_MS)));
  const late = reportMessages(parentFile).slice(before);
  expect(late.map((message) => message.content.includes("sent while the parent was closed"))).toEqual([true]);
  await quit(world.parentPane, thirdPid, "the parent Pi");
  await quit(child, manifest.child.pid, "the child Pi");
}

/** The notes (its base moved) delivered into a child's session, in order. */
export function noteMessages(sessionFile: string): { content: string; details: { kind: string; noteId: string } }[] {
  return entriesOnly(readEntries(sessionFile)).flatMap((entry) =>
    entry.type === "custom_message" && entry.customType === NOTE_MESSAGE_TYPE
      ? [{ content: String(entry.content), details: entry.details as { kind: string; noteId: string } }]
      : [],
  );
}

/**
 * A moving base: the child commits, main moves on; the parent's widget says the child is behind;
 * `/handoffs rebase` in the parent re-makes the child's commit on main's tip (its worktree along),
 * and the child's Pi tells its conversation once, at its idle point.
 */
export async function runRebaseTrip(world: ReturnTripWorld): Promise<void> {
  const { repo, sandbox } = world;
  const parentFile = onlySessionFile(sandbox, repo.root);
  const parentPid = await startParent(world, parentFile);
  const manifest = await handOffUnfocused(world.parentPane, sandbox.agentDir, "feat/follow");
  const worktree = manifest.worktree.path;
  const child = world.childPane(manifest);
  await waitForScreen(child, PI_READY, "the child TUI");
  const work = repo.commitFile("follow.txt", "follow\n", "follow: work", { cwd: worktree });
  const moved = repo.commitFile("moved.txt", "moved\n", "main moves on");

  await waitForScreen(world.parentPane, /handoff feat\/follow +idle \S+( \S+)? +\(behind 1\)/, "the widget: behind 1");
  await submitLine(
    world.parentPane,
    `/handoffs rebase ${manifest.id}`,
    /Rebased 1 commit of feat\/follow onto main/,
    60_000,
  );
  const tip = repo.run(["rev-parse", "refs/heads/feat/follow"]);
  expect(repo.run(["rev-parse", `${tip}^`])).toBe(moved);
  expect(repo.run(["log", "-1", "--format=%s %an", tip])).toBe(repo.run(["log", "-1", "--format=%s %an", work]));
  expect(readFileSync(`${worktree}/moved.txt`, "utf8")).toBe("moved\n");
  expect(repo.run(["status", "--porcelain"], { cwd: worktree })).toBe("");

  // The child hears it once, in its conversation, and the widget no longer says behind.
  const childFile = manifest.child.sessionFile ?? "";
  const told = await waitFor(
    () => {
      const notes = noteMessages(childFile);
      return notes.length > 0 ? notes : undefined;
    },
    { timeoutMs: 30_000, description: "the rebase note in the child session file" },
  );
  await waitForScreen(child, /The base of this handoff moved/, "the note on the child's screen");
  expect(told).toHaveLength(1);
  expect(told[0]?.details.kind).toBe("rebased");
  expect(told[0]?.content).toContain(`Branch feat/follow is now at ${tip.slice(0, 12)}`);
  await waitForScreen(world.parentPane, /handoff feat\/follow +idle \S+( \S+)?\s*$/m, "the widget without a mark");
  await new Promise((resolve) => setTimeout(resolve, 5 * Number(WATCH_POLL_ENV.PI_HANDOFF_WATCH_POLL_MS)));
  expect(noteMessages(childFile)).toHaveLength(1);
  await quit(child, manifest.child.pid, "the child Pi");
  await quit(world.parentPane, parentPid, "the parent Pi");
}
