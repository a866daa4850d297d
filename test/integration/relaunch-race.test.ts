/**
 * One actor per handoff: two and five `pi-handoff relaunch <id>` started at once (real processes,
 * real store, a private tmux server, the stand-in child, which here acknowledges only once the test
 * opens its gate, so the winner is still inside its launch when the others ask, however slowly
 * they start). Exactly one launch line is typed
 * (counted in the pane's history), one Pi runs, and every other relaunch answers with the reason
 * (busy: what the winner does, its pid) and returns before the winner has finished. On Herdr (the
 * test double) the same with three relaunches in one process, counted in the double's call log.
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { inspectHandoff } from "../../src/inventory/inventory.ts";
import { relaunchHandoff } from "../../src/relaunch/relaunch.ts";
import {
  createHerdrRecoveryRig,
  isProcessAlive,
  killAndWait,
  runningManifest,
  type HerdrRecoveryRig,
} from "../support/recovery-rig.ts";
import {
  createWorld,
  listInventory,
  runCli,
  standInPiOnPath,
  type ProcessRun,
  type World,
} from "../support/reliability.ts";
import { waitFor } from "../support/tmux.ts";

describe("concurrent relaunches of one handoff", () => {
  let world: World;
  let cliEnv: Record<string, string>;
  /** While this file is missing, a relaunched stand-in child does not acknowledge: its launch waits. */
  let ackGate: string;

  beforeAll(async () => {
    world = await createWorld({ prefix: "phw-relaunch-race-" });
    ackGate = join(world.dir, "ack-gate");
    cliEnv = {
      ...world.env,
      PATH: `${standInPiOnPath(world.dir, { ackGate })}:${world.env.PATH ?? ""}`,
      PI_HANDOFF_CONFIRM_TIMEOUT_MS: "120000",
    };
  });
  afterAll(async () => {
    await world?.cleanup();
  });

  async function manifestOf(id: string): Promise<Manifest> {
    const read = await world.store.read(id);
    if (!read.ok) throw new Error(read.message);
    return read.manifest;
  }

  /** Lines of the pane's whole history that carry the handoff's id: the typed launch lines. */
  async function typedLines(manifest: Manifest): Promise<number> {
    const paneId = manifest.mux.kind === "tmux" ? manifest.mux.paneId : undefined;
    if (paneId === undefined) throw new Error("no pane recorded");
    const history = await world.tmux.tmux(["capture-pane", "-p", "-J", "-S", "-", "-t", paneId]);
    return history.split("\n").filter((line) => line.includes(manifest.id)).length;
  }

  it.each([2, 5])(
    "%i at once: one line typed, one Pi, the others told at once who is relaunching it",
    async (count) => {
      const handedOff = runningManifest(await world.handoff({ branch: `race/${count}` }));
      const id = handedOff.id;
      await killAndWait(handedOff.child.pid ?? 0);
      expect((await listInventory(cliEnv)).handoffs.find((handoff) => handoff.id === id)?.status).toEqual({
        code: "no_child",
      });
      const linesBefore = await typedLines(handedOff);
      expect(linesBefore).toBe(1);

      // Started together; the order in which they end is recorded. The child acknowledges only once
      // every loser has answered: the winner is still waiting for it then.
      rmSync(ackGate, { force: true });
      const finished: number[] = [];
      const pending = Promise.all(
        Array.from({ length: count }, (_, index) =>
          runCli(["relaunch", id, "--no-focus"], cliEnv).then((run: ProcessRun) => {
            finished.push(index);
            return run;
          }),
        ),
      );
      let runs: ProcessRun[];
      try {
        await waitFor(() => finished.length >= count - 1, {
          timeoutMs: 40_000,
          description: "every relaunch but one to answer",
        });
      } finally {
        // Opened whatever happened, so no relaunch is left waiting for a child that never confirms.
        writeFileSync(ackGate, "");
        runs = await pending;
      }

      const winners = runs.flatMap((run, index) => (run.status === 0 ? [index] : []));
      expect(winners, runs.map((run) => run.stderr).join("\n")).toHaveLength(1);
      const winner = winners[0] ?? -1;
      const running = await manifestOf(id);
      expect(running.state).toBe("running");
      expect(running.child.confirmedBy).toBe("ack");
      expect(running.owner?.pid).toBeGreaterThan(0);
      for (const [index, run] of runs.entries()) {
        if (index === winner) continue;
        expect(run.status).toBe(1);
        // The reason, naming the winner's action and pid (the winner's process is the manifest's owner).
        expect(run.stderr).toMatch(
          new RegExp(
            `^pi-handoff relaunch: Handoff ${id} is busy: process ${running.owner?.pid} is relaunching it \\(since [0-9T:.\\-]+Z\\); nothing was done, try again once it has finished\\.\\n$`,
          ),
        );
        expect(run.stdout).toBe("");
      }
      // Every loser returned while the winner was still waiting for its child.
      expect(finished.at(-1)).toBe(winner);

      // Exactly one more launch line anywhere, and exactly one Pi on the session.
      expect(await typedLines(running)).toBe(linesBefore + 1);
      const report = (await listInventory(cliEnv)).handoffs.find((handoff) => handoff.id === id);
      expect(report?.status).toEqual({
        code: "child_running",
        writers: [{ pid: running.child.pid, evidence: ["recorded_pid", "marker", "cwd"] }],
      });
      expect(isProcessAlive(running.child.pid ?? 0)).toBe(true);
      // Nothing is left in the store: the action lock went with the winner (the child's manifest lock with the child's acknowledgement).
      await waitFor(() => !existsSync(`${world.store.pathFor(id)}.lock`), {
        description: "the child's lock on the manifest",
      });
      expect(await world.store.leftovers()).toEqual([]);
      await killAndWait(running.child.pid ?? 0);
    },
  );

  it("a removal while a relaunch runs is refused at once, naming it, and changes nothing", async () => {
    const handedOff = runningManifest(await world.handoff({ branch: "race/remove" }));
    const id = handedOff.id;
    await killAndWait(handedOff.child.pid ?? 0);
    rmSync(ackGate, { force: true });
    const relaunch = runCli(["relaunch", id, "--no-focus"], cliEnv);
    let owner: number | undefined;
    let removed: ProcessRun;
    let stillLaunching: string;
    try {
      // The relaunch holds the handoff once it records itself as the owner of the launch.
      await waitFor(async () => (await manifestOf(id)).state === "launching", {
        timeoutMs: 30_000,
        description: "the relaunch to record launching",
      });
      owner = (await manifestOf(id)).owner?.pid;
      removed = await runCli(["remove", id], cliEnv);
      stillLaunching = (await manifestOf(id)).state;
    } finally {
      writeFileSync(ackGate, "");
    }
    expect(removed.status).toBe(1);
    expect(removed.stderr).toMatch(
      new RegExp(
        `^pi-handoff remove: Handoff ${id} is busy: process ${owner} is relaunching it \\(since .+\\); nothing was done, try again once it has finished\\.\\n$`,
      ),
    );
    expect(removed.stdout).toBe("");
    expect(stillLaunching).toBe("launching");
    const relaunched = await relaunch;
    expect(relaunched.status, relaunched.stderr).toBe(0);
    const running = await manifestOf(id);
    expect(running.state).toBe("running");
    expect(running.history.map((entry) => entry.state)).not.toContain("removed");
    await killAndWait(running.child.pid ?? 0);
  });
});

describe("concurrent relaunches of one handoff on Herdr", () => {
  let rig: HerdrRecoveryRig;

  beforeAll(async () => {
    rig = await createHerdrRecoveryRig();
  });
  afterAll(async () => {
    await rig?.cleanup();
  });

  it("three at once: one `pane run`, one Pi, the other two told at once that this process is relaunching it", async () => {
    const handedOff = runningManifest(await rig.handoff("race/herdr"));
    const paneId = handedOff.mux.paneId;
    await killAndWait(handedOff.child.pid ?? 0);
    rig.herdr.clearCalls();

    const outcomes = await Promise.all(
      [1, 2, 3].map(() => relaunchHandoff(rig.relaunchDeps(), handedOff.id, { focus: false })),
    );
    const running = outcomes.filter((outcome) => outcome.code === "running");
    expect(running, JSON.stringify(outcomes)).toHaveLength(1);
    const refusals = outcomes.filter((outcome) => outcome.code === "refused");
    expect(refusals).toHaveLength(2);
    for (const refusal of refusals) {
      expect(refusal).toEqual({
        code: "refused",
        reason: "busy",
        message: expect.stringMatching(
          new RegExp(
            `^Handoff ${handedOff.id} is busy: process ${process.pid} is relaunching it \\(since [0-9T:.\\-]+Z\\); nothing was done, try again once it has finished\\.$`,
          ),
        ),
      });
    }
    const typed = rig.herdr
      .calls()
      .filter((call) => call.argv[0] === "pane" && call.argv[1] === "run" && call.argv[2] === paneId);
    expect(typed).toHaveLength(1);
    const after = await rig.read(handedOff.id);
    expect(after.state).toBe("running");
    const inspected = await inspectHandoff(rig.recoveryDeps(), handedOff.id);
    if (inspected.code !== "found") throw new Error(inspected.message);
    // One writer, the relaunched child (Herdr may add its own agent detection to the evidence).
    const status = inspected.report.status;
    expect(status.code).toBe("child_running");
    const writers = status.code === "child_running" ? status.writers : [];
    expect(writers.map((writer) => writer.pid)).toEqual([after.child.pid]);
    expect(writers[0]?.evidence).toEqual(expect.arrayContaining(["recorded_pid", "marker", "cwd"]));
    await waitFor(() => !existsSync(`${rig.store.pathFor(handedOff.id)}.lock`), {
      description: "the child's lock on the manifest",
    });
    expect(await rig.store.leftovers()).toEqual([]);
    await killAndWait(after.child.pid ?? 0);
  });
});
