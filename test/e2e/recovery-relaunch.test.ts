/**
 * End to end with the real Pi: a print-mode handoff starts a real child Pi in a private tmux
 * window; the child is killed; `pi-handoff relaunch` (a real process, outside tmux) refuses while
 * the child lives, then starts the real Pi again on the same session, which acknowledges again and
 * carries on the conversation. Then a Pi started by hand on the child session, outside the
 * worktree and without the handoff marker, is seen through its session lease alone: relaunch is
 * refused while it lives, a second hand-started Pi warns and does not take the session, and takes
 * it over once the first has stopped; relaunch is allowed once no Pi is left.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LeaseFileSchema, leasePath, readSessionLease } from "../../src/child/lease.ts";
import { processFacts, sameStart } from "../../src/process/facts.ts";
import { listDescendants } from "../../src/process/procfs.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { InventoryReportSchema } from "../../src/inventory/report-schema.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import {
  createPiSandbox,
  EXTENSION_ENTRY,
  FAUX_MODEL,
  NODE_BIN,
  onlySessionFile,
  PI_CLI,
  PROJECT_ROOT,
  readEntries,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { isProcessAlive, killAndWait } from "../support/recovery-rig.ts";
import { paneEnv, startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";

const BIN = join(PROJECT_ROOT, "bin", "pi-handoff.mjs");

/** The TUI wraps notices at its width: compare with runs of white space as one space. */
function screenText(screen: string): string {
  return screen.replace(/\s+/g, " ");
}

describe("pi-handoff relaunch with the real Pi", () => {
  let sandbox: PiSandbox;
  let repo: TempRepo;
  let tmux: PrivateTmux;

  beforeAll(async () => {
    sandbox = createPiSandbox("phw-relaunch-");
    repo = createTempRepo({ prefix: "phw-relaunch-git-" });
    tmux = await startPrivateTmux({ env: sandbox.env });
  });
  afterAll(async () => {
    await tmux?.kill();
    repo?.cleanup();
    sandbox?.cleanup();
  });

  function cli(args: readonly string[]) {
    // A shell outside tmux: no $TMUX; the handoff is found through the socket its manifest recorded.
    const run = spawnSync(NODE_BIN, [BIN, ...args], {
      cwd: repo.root,
      env: { ...sandbox.env, PI_HANDOFF_CONFIRM_TIMEOUT_MS: "40000" },
      encoding: "utf8",
      timeout: 120_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { status: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
  }

  it("relaunches a killed child Pi, which acknowledges again and answers on the same session", async () => {
    runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
    const parentFile = onlySessionFile(sandbox, repo.root);
    const inTmux = await paneEnv(tmux);
    const handoff = spawnSync(
      NODE_BIN,
      [
        PI_CLI,
        "-p",
        "--session",
        parentFile,
        "--model",
        FAUX_MODEL,
        "--extension",
        EXTENSION_ENTRY,
        "/handoff-worktree feat/relaunch --no-focus",
      ],
      {
        cwd: repo.root,
        env: {
          ...sandbox.env,
          ...inTmux,
          PI_HANDOFF_CONFIRM_TIMEOUT_MS: "40000",
        },
        encoding: "utf8",
        timeout: 120_000,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    expect(handoff.stderr).toContain("Handed off to branch feat/relaunch");
    expect(handoff.status).toBe(0);

    const store = ManifestStore.forAgentDir(sandbox.agentDir);
    const [entry] = await store.list();
    if (entry === undefined || !entry.ok) throw new Error("no manifest");
    const first = entry.manifest;
    const firstPid = first.child.pid ?? 0;
    const childFile = first.child.sessionFile ?? "";
    expect(first.state).toBe("running");
    expect(first.child).toMatchObject({
      model: { provider: "faux", id: "faux-1" },
      extraArgs: ["--extension", EXTENSION_ENTRY],
    });
    expect(readFileSync(`/proc/${firstPid}/comm`, "utf8").trim()).toBe("pi");
    await waitFor(() => !existsSync(`${store.pathFor(first.id)}.lock`), {
      description: "the child's acknowledgement to release its lock",
    });

    // The inventory sees the real child as the session's writer.
    const listed = InventoryReportSchema.parse(JSON.parse(cli(["list", "--json"]).stdout));
    expect(listed.handoffs.map((h) => [h.id, h.status])).toEqual([
      [
        first.id,
        { code: "child_running", writers: [{ pid: firstPid, evidence: ["lease", "recorded_pid", "marker", "cwd"] }] },
      ],
    ]);

    // While it lives, no second Pi.
    const refused = cli(["relaunch", first.id]);
    expect(refused).toEqual({
      status: 1,
      stdout: "",
      stderr: `pi-handoff relaunch: Handoff ${first.id} already has a live Pi on its session (pid ${firstPid}), so no second one was started.\n`,
    });

    await killAndWait(firstPid);
    const relaunched = cli(["relaunch", first.id]);
    expect(relaunched.stderr).toBe(
      "launch: Waiting for the new pane's shell\nlaunch: Starting Pi in the new pane\nconfirm: Waiting for the new Pi to start\nfocus: Switching to the new window\n",
    );
    expect(relaunched.status).toBe(0);

    const read = await store.read(first.id);
    if (!read.ok) throw new Error(read.message);
    const second = read.manifest;
    const secondPid = second.child.pid ?? 0;
    expect(relaunched.stdout).toMatch(new RegExp(`^Relaunched handoff ${first.id}: Pi pid ${secondPid} runs on `));
    expect(secondPid).not.toBe(firstPid);
    expect(isProcessAlive(secondPid)).toBe(true);
    expect(second.state).toBe("running");
    expect(second.child.confirmedBy).toBe("ack");
    expect(second.history.map((h) => h.state)).toEqual([
      "provisioning",
      "provisioned",
      "forked",
      "launching",
      "running",
      "launching",
      "running",
    ]);
    expect(second.history.at(-1)?.note).toBe(`acknowledged by pid ${secondPid}`);
    // The real Pi, in the worktree, with the marker, on the same session file.
    expect(readFileSync(`/proc/${secondPid}/comm`, "utf8").trim()).toBe("pi");
    expect(realpathSync(readlinkSync(`/proc/${secondPid}/cwd`))).toBe(first.worktree.path);
    expect(readFileSync(`/proc/${secondPid}/environ`, "utf8").split("\0")).toContain(`PI_HANDOFF_ID=${first.id}`);
    expect(second.child.sessionFile).toBe(childFile);
    // Started by its launcher (typed into the pane's shell): the params it ran hold the flags.
    const stem = store.pathFor(first.id).replace(/\.json$/, "");
    expect(second.child.command).toBe(`sh ${stem}.launch.sh`);
    const params = readFileSync(`${stem}.launch.params`, "utf8");
    expect(params).toContain(`--session ${childFile} --model faux/faux-1`);
    expect(params).toContain(`--extension ${EXTENSION_ENTRY}`);

    // It carries on the conversation in that session.
    if (second.mux.kind !== "tmux") throw new Error("expected tmux");
    const pane = second.mux.paneId ?? "";
    await waitFor(async () => /(?<!\/)faux-1/.test(await tmux.capturePane(pane)), {
      timeoutMs: 30_000,
      description: "the relaunched TUI",
    });
    const deadline = Date.now() + 30_000;
    await tmux.tmux(["send-keys", "-t", pane, "-l", "after the relaunch"]);
    while (!readFileSync(childFile, "utf8").includes("faux reply to: after the relaunch") && Date.now() < deadline) {
      await tmux.tmux(["send-keys", "-t", pane, "Enter"]);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    const entries = readEntries(childFile);
    expect(entries.filter((e) => e.type === "custom_message" && e.customType === "handoff-worktree")).toHaveLength(1);
    expect(JSON.stringify(entries)).toContain("faux reply to: after the relaunch");

    // `/handoffs` in the parent, in print mode: the same inventory, on stderr.
    const fromPi = spawnSync(
      NODE_BIN,
      [PI_CLI, "-p", "--session", parentFile, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY, "/handoffs"],
      {
        cwd: repo.root,
        env: sandbox.env,
        encoding: "utf8",
        timeout: 120_000,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    expect(fromPi.status).toBe(0);
    expect(fromPi.stderr).toMatch(
      new RegExp(
        `^ID +STATUS +CHILD +BRANCH +FLAGS +ACTIONS\n${first.id} +child running \\(pid ${secondPid}\\) +idle \\d+[smhd]( \\d+m)? +feat/relaunch +- +focus \\(quit its Pi to remove\\)\n`,
        "m",
      ),
    );
  });

  it("sees a Pi started by hand on the child session through its lease alone, and never lets a second one write", async () => {
    const store = ManifestStore.forAgentDir(sandbox.agentDir);
    const [entry] = await store.list();
    if (entry === undefined || !entry.ok) throw new Error("no manifest from the test before");
    const { manifest } = entry;
    const childFile = manifest.child.sessionFile ?? "";
    await killAndWait(manifest.child.pid ?? 0);
    await waitFor(async () => (await readSessionLease(sandbox.agentDir, childFile)).state !== "live", {
      description: "the relaunched child's lease to end",
    });

    // By hand, from a directory outside the worktree, with no PI_HANDOFF_ID: only the lease tells.
    const startByHand = async (): Promise<string> =>
      (
        await tmux.tmux([
          "new-window",
          "-d",
          "-c",
          sandbox.home,
          "-P",
          "-F",
          "#{pane_id}",
          "--",
          NODE_BIN,
          PI_CLI,
          "--session",
          childFile,
          "--model",
          FAUX_MODEL,
          "--extension",
          EXTENSION_ENTRY,
        ])
      ).trim();
    const handPane = await startByHand();
    const handLease = await waitFor(
      async () => {
        const lease = await readSessionLease(sandbox.agentDir, childFile);
        return lease.state === "live" ? lease : undefined;
      },
      { timeoutMs: 30_000, description: "the hand-started Pi's lease" },
    );
    const handPid = handLease.pid;
    // The Pi read its own start the way this test does: a portable pass is portable in every process.
    const leaseFile = LeaseFileSchema.parse(JSON.parse(readFileSync(leasePath(sandbox.agentDir, childFile), "utf8")));
    expect(sameStart(leaseFile.start, await processFacts().startToken(handPid))).toBe(true);
    expect(leaseFile.start?.startsWith("ps:")).toBe(process.env.PI_HANDOFF_PROCESS_INFO === "portable");
    expect(
      readFileSync(`/proc/${handPid}/environ`, "utf8")
        .split("\0")
        .some((v) => v.startsWith("PI_HANDOFF_ID=")),
    ).toBe(false);
    expect(realpathSync(readlinkSync(`/proc/${handPid}/cwd`))).toBe(realpathSync(sandbox.home));

    const listed = InventoryReportSchema.parse(JSON.parse(cli(["list", "--json"]).stdout));
    expect(listed.handoffs.map((h) => h.status)).toEqual([
      { code: "child_running", writers: [{ pid: handPid, evidence: ["lease"] }] },
    ]);
    expect(cli(["relaunch", manifest.id])).toEqual({
      status: 1,
      stdout: "",
      stderr: `pi-handoff relaunch: Handoff ${manifest.id} already has a live Pi on its session (pid ${handPid}), so no second one was started.\n`,
    });

    // A second Pi on the same session warns in its TUI and leaves the lease where it is.
    const secondPane = await startByHand();
    await waitFor(
      async () =>
        screenText(await tmux.capturePane(secondPane)).includes(
          `Another Pi (pid ${handPid}) holds the lease on session`,
        ),
      {
        timeoutMs: 30_000,
        description: "the second Pi's warning",
      },
    );
    expect(await readSessionLease(sandbox.agentDir, childFile)).toMatchObject({ state: "live", pid: handPid });
    const secondPanePid = Number((await tmux.tmux(["display-message", "-p", "-t", secondPane, "#{pane_pid}"])).trim());
    const secondPids = [secondPanePid, ...(await listDescendants(secondPanePid))];

    // Once the first stops, the second (still running) takes the session over on its next beat.
    await killAndWait(handPid);
    // tmux closes the pane once it has reaped the process, a moment after the process is gone.
    await waitFor(
      async () => !(await tmux.tmux(["list-panes", "-a", "-F", "#{pane_id}"])).split("\n").includes(handPane),
      {
        description: "the hand-started Pi's pane to close",
      },
    );
    const takenOver = await waitFor(
      async () => {
        const lease = await readSessionLease(sandbox.agentDir, childFile);
        return lease.state === "live" ? lease : undefined;
      },
      { timeoutMs: 20_000, description: "the takeover" },
    );
    expect(secondPids).toContain(takenOver.pid);
    const secondPid = takenOver.pid;
    await waitFor(
      async () =>
        screenText(await tmux.capturePane(secondPane)).includes("has stopped; this Pi now holds the session."),
      {
        description: "the takeover notice",
      },
    );
    expect(cli(["relaunch", manifest.id]).stderr).toBe(
      `pi-handoff relaunch: Handoff ${manifest.id} already has a live Pi on its session (pid ${secondPid}), so no second one was started.\n`,
    );

    // No Pi left: relaunch is allowed again.
    await killAndWait(secondPid);
    const relaunched = cli(["relaunch", manifest.id, "--no-focus"]);
    expect(relaunched.stderr).toBe(
      "launch: Waiting for the new pane's shell\nlaunch: Starting Pi in the new pane\nconfirm: Waiting for the new Pi to start\n",
    );
    expect(relaunched.status).toBe(0);
    const after = await store.read(manifest.id);
    if (!after.ok) throw new Error(after.message);
    expect(await readSessionLease(sandbox.agentDir, childFile)).toMatchObject({
      state: "live",
      pid: after.manifest.child.pid,
    });
  });
});
