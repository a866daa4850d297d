/**
 * Issue 41 point 12, with the real Pi in a private tmux server: a child's report and the notice of
 * its landing each reach the parent once, drawn by the package's renderer (never Pi's raw
 * `[handoff-worktree-report]` box), also when the parent starts again; and a later handoff does not
 * hand them on: the next child's session holds no copy of them as a message (the fork keeps each as
 * a custom entry, out of the child's context), and the next child's Pi shows none of them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPORT_MESSAGE_TYPE } from "../../src/adoption/reports.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { handOffUnfocused } from "../support/handoff-scenario.ts";
import { startTmuxRig, type TmuxRig } from "../support/mux-rig.ts";
import {
  FAUX_MODEL,
  createPiSandbox,
  onlySessionFile,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { runCli } from "../support/reliability.ts";
import { quit, reportMessages, startParent, WATCH_POLL_ENV } from "../support/return-trip.ts";
import { waitFor } from "../support/tmux.ts";
import { entriesOnly, PI_READY, submitLine, waitForScreen } from "../support/tui.ts";

const RAW_LABEL = `[${REPORT_MESSAGE_TYPE}]`;

/** How often `text` occurs on the screen. */
function occurrences(screen: string, text: string): number {
  return screen.split(text).length - 1;
}

describe("a child's report in the parent, with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let rig: TmuxRig | undefined;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-report-once-");
    Object.assign(sandbox.env, WATCH_POLL_ENV);
    repo = createTempRepo({ extraCommits: 1 });
    rig = await startTmuxRig(sandbox);
  });

  afterAll(async () => {
    await rig?.stop();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  it("shows each report once, rendered, and the next child gets no copy of it", async () => {
    if (rig === undefined) throw new Error("no tmux rig");
    const { parentPane } = rig;
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
    const parentFile = onlySessionFile(sandbox, repo.root);
    const world = { sandbox, repo, ...rig };
    let parentPid = await startParent(world, parentFile);

    // The child reports; the parent shows it once, drawn by the package's renderer.
    const first = await handOffUnfocused(parentPane, sandbox.agentDir, "feat/one");
    const child = rig.childPane(first);
    await waitForScreen(child, PI_READY, "the child TUI");
    const commit = repo.commitFile("one.txt", "one\n", "one: add", { cwd: first.worktree.path });
    await submitLine(child, "/handoff-report wrote one.txt; token-r41", /Report sent to the parent session/);
    await waitFor(() => (reportMessages(parentFile).length > 0 ? true : undefined), {
      timeoutMs: 20_000,
      description: "the report in the parent session file",
    });
    let screen = await waitForScreen(parentPane, /token-r41/, "the report on the parent's screen");
    expect(occurrences(screen, "Report from handoff feat/one"), screen).toBe(1);
    expect(occurrences(screen, "token-r41"), screen).toBe(1);
    expect(screen).not.toContain(RAW_LABEL);

    // Landed from a shell while the parent is closed: the notice is delivered as the parent starts
    // (before Pi draws the conversation), and shown once, rendered.
    await quit(child, first.child?.pid, "the child Pi");
    await quit(parentPane, parentPid, "the parent Pi");
    const landed = await runCli(["land", first.id, "--remove"], sandbox.env, repo.root);
    expect(landed.stderr).toBe("");
    expect(landed.status).toBe(0);
    expect(repo.run(["rev-parse", "main"])).toBe(commit);
    parentPid = await startParent(world, parentFile);
    screen = await waitForScreen(parentPane, /was landed into main/, "the landing notice on the parent's screen");
    // Pi draws its conversation once it is ready: a second copy would come with it.
    screen = await waitForScreen(parentPane, /handoff feat\/one +removed/, "the widget after the restart");
    expect(occurrences(screen, "Report from handoff feat/one"), screen).toBe(1);
    expect(occurrences(screen, "was landed into main"), screen).toBe(1);
    expect(screen).not.toContain(RAW_LABEL);
    expect(reportMessages(parentFile).map((message) => message.details.kind)).toEqual(["report", "landed"]);

    // The next handoff: its child holds no copy of either as a message, and shows neither.
    const second = await handOffUnfocused(parentPane, sandbox.agentDir, "feat/two");
    const childFile = second.child?.sessionFile;
    if (childFile === undefined) throw new Error("the second child has no session file");
    expect(reportMessages(childFile)).toEqual([]);
    const kept = entriesOnly(readEntries(childFile)).flatMap((entry) =>
      entry.type === "custom" && entry.customType === REPORT_MESSAGE_TYPE ? [entry] : [],
    );
    expect(kept).toHaveLength(2);
    const secondChild = rig.childPane(second);
    const childScreen = await waitForScreen(secondChild, PI_READY, "the second child TUI");
    expect(childScreen).not.toContain("token-r41");
    expect(childScreen).not.toContain("was landed into main");
    expect(childScreen).not.toContain(RAW_LABEL);

    // Landed from the parent's own /handoffs: the command's outcome says it, and the notice is for
    // the parent's model only (in the session, not drawn a second time on the screen).
    const two = repo.commitFile("two.txt", "two\n", "two: add", { cwd: second.worktree.path });
    await quit(secondChild, second.child?.pid, "the second child Pi");
    screen = await submitLine(
      parentPane,
      `/handoffs land ${second.id}`,
      /Landed 1 commit of feat\/two into main \(ff\): main is now at/,
      60_000,
    );
    expect(repo.run(["rev-parse", "main"])).toBe(two);
    const notice = await waitFor(
      () =>
        entriesOnly(readEntries(parentFile)).find(
          (entry) =>
            entry.type === "custom_message" &&
            entry.customType === REPORT_MESSAGE_TYPE &&
            (entry.details as { branch?: string; kind?: string }).branch === "feat/two",
        ),
      { timeoutMs: 20_000, description: "the landing notice of feat/two in the parent session file" },
    );
    expect(notice).toMatchObject({ display: false, details: { kind: "landed", commits: [two] } });
    // Delivered (it is in the session, and Pi draws what it appends at once): the screen says the landing once.
    screen = await parentPane.read();
    expect(occurrences(screen, "of feat/two into main"), screen).toBe(1);
    expect(occurrences(screen, "feat/two was landed into main"), screen).toBe(0);
    expect(screen).not.toContain(RAW_LABEL);
    await quit(parentPane, parentPid, "the parent Pi");
  }, 300_000);
});
