/**
 * The one liveness rule of src/locks/ on its own: a live holder, a dead pid, a reused pid, a start
 * time that cannot be compared, a frozen heartbeat and a holder on another machine sharing the
 * directory. Real processes where the facts matter (spawned, stopped, killed), a fake process-facts
 * port where a case cannot be made for real (a pid reused by another process).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { holderOf, type Holder } from "../../src/locks/holder.ts";
import { isStaleLockDirectory } from "../../src/locks/file-lock.ts";
import {
  decideLiveness,
  heartbeatLiveness,
  holderLiveness,
  livenessClause,
  stillHeld,
} from "../../src/locks/liveness.ts";
import type { ProcessFacts } from "../../src/process/facts.ts";
import { portableFacts } from "../../src/process/portable.ts";
import { procfsFacts } from "../../src/process/procfs.ts";
import { FakeProcessFacts } from "../support/fake-process-facts.ts";

const T0 = new Date("2026-12-01T08:00:00.000Z");
const later = (ms: number): Date => new Date(T0.getTime() + ms);
const STALE_AFTER_MS = 30_000;
const beat = { at: T0.toISOString(), staleAfterMs: STALE_AFTER_MS };

const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** A real process that runs until it is killed. */
function sleeper(): ChildProcess & { pid: number } {
  const child = spawn("sleep", ["60"], { stdio: "ignore" });
  children.push(child);
  if (child.pid === undefined) throw new Error("sleep did not start");
  return child as ChildProcess & { pid: number };
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/** A facts port that fails the test if it is asked anything. */
const untouchable = new Proxy({} as ProcessFacts, {
  get(_target, name) {
    return () => {
      throw new Error(`process facts asked ${String(name)} about a holder on another machine`);
    };
  },
});

describe.each([
  ["procfs", procfsFacts],
  ["portable", portableFacts],
] as const)("the liveness rule with real processes (%s facts)", (_name, facts: ProcessFacts) => {
  it("a live holder is alive, on its identity alone", async () => {
    const child = sleeper();
    const holder = await holderOf(child.pid, facts, "here");
    expect(holder.start).toBeDefined();
    expect(await holderLiveness(holder, facts, T0, undefined, "here")).toEqual({ verdict: "alive", code: "alive" });
  });

  it("a holder whose pid is gone is dead, heartbeat or not", async () => {
    const child = sleeper();
    const holder = await holderOf(child.pid, facts, "here");
    await killed(child);
    expect(await holderLiveness(holder, facts, T0, undefined, "here")).toEqual({
      verdict: "dead",
      code: "no_such_process",
    });
    expect(await holderLiveness(holder, facts, T0, beat, "here")).toEqual({ verdict: "dead", code: "no_such_process" });
  });

  it("a live pid with another start is a reused pid: dead", async () => {
    const child = sleeper();
    const holder = await holderOf(child.pid, facts, "here");
    // The record of an earlier process that had this pid: the same kind of token, another start.
    const earlier: Holder = { pid: child.pid, start: `${holder.start}0`, host: "here" };
    expect(await holderLiveness(earlier, facts, T0, undefined, "here")).toEqual({
      verdict: "dead",
      code: "pid_reused",
    });
  });

  it("a stopped holder with a frozen heartbeat stays alive while it is confirmed (it beats again when it wakes)", async () => {
    const child = sleeper();
    const holder = await holderOf(child.pid, facts, "here");
    child.kill("SIGSTOP");
    expect(await holderLiveness(holder, facts, later(10 * STALE_AFTER_MS), beat, "here")).toEqual({
      verdict: "alive",
      code: "alive",
    });
  });
});

describe("the liveness rule where the start time cannot be compared", () => {
  it("a live holder recorded by the other process-facts implementation is unknown, and held, without a heartbeat", async () => {
    const child = sleeper();
    const { startedAtMs: _dropped, ...recorded } = await holderOf(child.pid, portableFacts, "here");
    // A `ps` token next to a /proc one: neither proves reuse nor identity.
    const liveness = await holderLiveness(recorded, procfsFacts, T0, undefined, "here");
    expect(liveness).toEqual({ verdict: "unknown", code: "start_uncomparable" });
    expect(stillHeld(liveness)).toBe(true);
    expect(livenessClause(recorded, liveness)).toContain("counts as alive");
  });

  it("compares start times across implementations when the tokens cannot be compared", async () => {
    const child = sleeper();
    const recorded = await holderOf(child.pid, portableFacts, "here");
    expect(await holderLiveness(recorded, procfsFacts, T0, undefined, "here")).toEqual({
      verdict: "alive",
      code: "alive",
    });
  });

  it("with a heartbeat, the heartbeat decides: fresh is alive, older than the stale age is dead", () => {
    const holder: Holder = { pid: 4242 };
    const observed = { where: "here" as const, process: { alive: true as const } };
    expect(decideLiveness(holder, observed, later(STALE_AFTER_MS), beat)).toEqual({
      verdict: "alive",
      code: "heartbeat_fresh",
    });
    expect(decideLiveness(holder, observed, later(STALE_AFTER_MS + 1), beat)).toEqual({
      verdict: "dead",
      code: "heartbeat_stale",
    });
  });
});

describe("the liveness rule with a fake process table", () => {
  it("a pid reused by a process started later is dead, and by the same process alive", async () => {
    const facts = new FakeProcessFacts([{ pid: 4242, start: "boot/999" }]);
    expect(await holderLiveness({ pid: 4242, start: "boot/100" }, facts, T0)).toEqual({
      verdict: "dead",
      code: "pid_reused",
    });
    expect(await holderLiveness({ pid: 4242, start: "boot/999" }, facts, T0)).toEqual({
      verdict: "alive",
      code: "alive",
    });
  });

  it("a zombie is dead: it writes nothing", async () => {
    const facts = new FakeProcessFacts([{ pid: 4242, start: "boot/100", zombie: true }]);
    expect(await holderLiveness({ pid: 4242, start: "boot/100" }, facts, T0)).toEqual({
      verdict: "dead",
      code: "no_such_process",
    });
  });

  it("a record without a start time is judged alive-unless-heartbeat like any uncomparable one", async () => {
    const facts = new FakeProcessFacts([{ pid: 4242, start: "boot/100" }]);
    expect(await holderLiveness({ pid: 4242 }, facts, T0)).toEqual({ verdict: "unknown", code: "start_uncomparable" });
    expect(await holderLiveness({ pid: 4242 }, facts, later(STALE_AFTER_MS + 1), beat)).toEqual({
      verdict: "dead",
      code: "heartbeat_stale",
    });
  });
});

describe("a holder on another machine sharing the directory", () => {
  it("is never judged by its pid: unknown (held) without a heartbeat, even when that pid is free here", async () => {
    const child = sleeper();
    const holder = await holderOf(child.pid, procfsFacts, "there");
    await killed(child);
    const liveness = await holderLiveness(holder, untouchable, T0, undefined, "here");
    expect(liveness).toEqual({ verdict: "unknown", code: "another_machine" });
    expect(stillHeld(liveness)).toBe(true);
    expect(livenessClause(holder, liveness)).toBe(
      "runs on another machine (there), where this one cannot check it, so it counts as alive",
    );
  });

  it("is judged by its heartbeat where the protocol keeps one", async () => {
    const holder: Holder = { pid: process.pid, start: "boot/1", host: "there" };
    expect(await holderLiveness(holder, untouchable, later(STALE_AFTER_MS), beat, "here")).toEqual({
      verdict: "alive",
      code: "heartbeat_fresh",
    });
    // A pid that lives here does not keep a silent holder there alive.
    expect(await holderLiveness(holder, untouchable, later(STALE_AFTER_MS + 1), beat, "here")).toEqual({
      verdict: "dead",
      code: "heartbeat_stale",
    });
  });

  it("a record without a host is of this machine (records written before hosts were recorded)", async () => {
    const facts = new FakeProcessFacts();
    expect(await holderLiveness({ pid: 4242 }, facts, T0, undefined, "here")).toEqual({
      verdict: "dead",
      code: "no_such_process",
    });
  });
});

describe("the heartbeat form of the rule (a lock that records no process)", () => {
  it("is fresh up to the stale age, stale after it, and stale when the time cannot be read", () => {
    expect(heartbeatLiveness(beat, later(STALE_AFTER_MS))).toEqual({ verdict: "alive", code: "heartbeat_fresh" });
    expect(heartbeatLiveness(beat, later(STALE_AFTER_MS + 1))).toEqual({ verdict: "dead", code: "heartbeat_stale" });
    expect(heartbeatLiveness({ at: "not a time", staleAfterMs: STALE_AFTER_MS }, T0)).toEqual({
      verdict: "dead",
      code: "heartbeat_stale",
    });
  });

  it("calls a lock directory abandoned once its mtime is older than the stale age, as proper-lockfile does", () => {
    expect(isStaleLockDirectory(T0.getTime(), 10_000, T0.getTime() + 10_000)).toBe(false);
    expect(isStaleLockDirectory(T0.getTime(), 10_000, T0.getTime() + 10_001)).toBe(true);
  });
});
