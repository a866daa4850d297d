import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  acquireSessionLease,
  judgeLease,
  LEASE_STALE_AFTER_MS,
  leaseDir,
  leasePath,
  LeaseFileSchema,
  readSessionLease,
  type LeaseFile,
} from "../../src/child/lease.ts";
import { findHandoffDetails } from "../../src/child/acknowledge.ts";
import { SessionLeaseKeeper, startOnSession, type LeaseEvent } from "../../src/child/session-writer.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import type { ProcessFacts } from "../../src/process/facts.ts";
import { portableFacts } from "../../src/process/portable.ts";
import { procfsFacts } from "../../src/process/procfs.ts";
import { HANDOFF_MESSAGE_TYPE } from "../../src/session/handoff-message.ts";
import { FakeProcessFacts } from "../support/fake-process-facts.ts";

const T0 = new Date("2026-12-01T08:00:00.000Z");

function record(overrides: Partial<LeaseFile> = {}): LeaseFile {
  return {
    version: 1,
    sessionFile: "/s/child.jsonl",
    pid: 4242,
    start: "boot/100",
    startedAtMs: T0.getTime() - 60_000,
    host: "here",
    acquiredAt: T0.toISOString(),
    heartbeatAt: T0.toISOString(),
    ...overrides,
  };
}

describe("judgeLease", () => {
  const later = (ms: number): Date => new Date(T0.getTime() + ms);

  it("keeps a confirmed live holder live even when its heartbeat is old (a suspended Pi writes again later)", () => {
    expect(judgeLease(record(), { alive: true, start: "boot/100" }, later(10 * LEASE_STALE_AFTER_MS))).toBe("live");
  });

  it("calls a lease stale once its pid is dead, or the pid now belongs to a process started at another time", () => {
    expect(judgeLease(record(), { alive: false }, later(1_000))).toBe("stale");
    expect(judgeLease(record(), { alive: true, start: "boot/999" }, later(1_000))).toBe("stale");
  });

  it("compares start times across implementations when the tokens cannot be compared", () => {
    const holder = { alive: true, start: "ps:1", startedAtMs: T0.getTime() - 60_000 + 900 };
    expect(judgeLease(record(), holder, later(10 * LEASE_STALE_AFTER_MS))).toBe("live");
    expect(judgeLease(record(), { ...holder, startedAtMs: T0.getTime() - 10_000 }, later(1_000))).toBe("stale");
  });

  it("decides by the heartbeat alone when the holder cannot be confirmed (no start, or another host)", () => {
    const unconfirmed = record({ start: undefined, startedAtMs: undefined });
    expect(judgeLease(unconfirmed, { alive: true }, later(LEASE_STALE_AFTER_MS))).toBe("live");
    expect(judgeLease(unconfirmed, { alive: true }, later(LEASE_STALE_AFTER_MS + 1))).toBe("stale");
    expect(judgeLease(record(), undefined, later(LEASE_STALE_AFTER_MS))).toBe("live");
    expect(judgeLease(record(), undefined, later(LEASE_STALE_AFTER_MS + 1))).toBe("stale");
  });
});

describe.each([
  ["procfs", procfsFacts],
  ["portable", portableFacts],
] as const)("the session lease with %s process facts", (_name, facts: ProcessFacts) => {
  let agentDir: string;
  let sessionFile: string;
  const children: Array<{ kill(signal: NodeJS.Signals): boolean } & PromiseLike<unknown>> = [];

  beforeEach(async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), "phw-lease-")));
    agentDir = join(dir, "agent");
    sessionFile = join(dir, "sessions", "child.jsonl");
    await mkdir(join(dir, "sessions"), { recursive: true });
    await writeFile(sessionFile, "{}\n");
  });
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill("SIGKILL");
      await child;
    }
    await rm(join(agentDir, ".."), { recursive: true, force: true });
  });

  function otherProcess(): number {
    const child = execa("sleep", ["300"], { reject: false });
    children.push(child);
    return child.pid ?? 0;
  }

  it("is held by the acquirer, read as live with its handoff, and gone once released", async () => {
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toEqual({ state: "none" });
    const acquired = await acquireSessionLease({ agentDir, sessionFile, handoffId: "h-1", facts });
    if (!acquired.ok) throw new Error(acquired.message);
    const onDisk = LeaseFileSchema.parse(JSON.parse(await readFile(leasePath(agentDir, sessionFile), "utf8")));
    expect(onDisk).toMatchObject({ version: 1, sessionFile, pid: process.pid, host: hostname(), handoffId: "h-1" });
    expect(onDisk.start).toBe(await facts.startToken(process.pid));
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toEqual({
      state: "live",
      pid: process.pid,
      heartbeatAt: onDisk.heartbeatAt,
      handoffId: "h-1",
    });

    await acquired.lease.release();
    expect(await readdir(leaseDir(agentDir))).toEqual([]);
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toEqual({ state: "none" });
  });

  it("refuses a second holder while the first lives, and hands over once it has died, leaving no stray file", async () => {
    const other = otherProcess();
    const first = await acquireSessionLease({ agentDir, sessionFile, pid: other, facts });
    expect(first.ok).toBe(true);
    const second = await acquireSessionLease({ agentDir, sessionFile, facts });
    expect(second).toMatchObject({ ok: false, code: "held", holder: { pid: other } });
    if (second.ok || second.code !== "held") throw new Error("unreachable");
    expect(second.message).toBe(
      `Another Pi (pid ${other}) holds the lease on session ${sessionFile} (heartbeat ${second.holder.heartbeatAt}).`,
    );

    children[0]?.kill("SIGKILL");
    await children[0];
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toMatchObject({ state: "stale", pid: other });
    const third = await acquireSessionLease({ agentDir, sessionFile, facts });
    if (!third.ok) throw new Error(third.message);
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toMatchObject({ state: "live", pid: process.pid });
    expect(await readdir(leaseDir(agentDir))).toEqual([leasePath(agentDir, sessionFile).split("/").at(-1)]);
  });

  it("gives the lease to exactly one of many Pi starting at once", async () => {
    const pids = [otherProcess(), otherProcess(), otherProcess(), otherProcess(), otherProcess()];
    const outcomes = await Promise.all(pids.map((pid) => acquireSessionLease({ agentDir, sessionFile, pid, facts })));
    const winners = outcomes.filter((outcome) => outcome.ok);
    expect(winners).toHaveLength(1);
    const lease = await readSessionLease(agentDir, sessionFile, { facts });
    expect(lease.state === "live" && pids.includes(lease.pid)).toBe(true);
    expect(outcomes.filter((outcome) => !outcome.ok && outcome.code === "held")).toHaveLength(4);
  });

  it("reads a corrupt lease as unreadable (the writer is unknown), and a starting Pi replaces it", async () => {
    await mkdir(leaseDir(agentDir), { recursive: true });
    await writeFile(leasePath(agentDir, sessionFile), "{ half");
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toEqual({
      state: "unreadable",
      message: `The session lease ${leasePath(agentDir, sessionFile)} is not valid JSON.`,
    });
    const acquired = await acquireSessionLease({ agentDir, sessionFile, facts });
    expect(acquired.ok).toBe(true);
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toMatchObject({ state: "live", pid: process.pid });
  });

  it("beats, notices when it was taken over, and then neither beats nor removes the new holder's lease", async () => {
    let clock = T0;
    const acquired = await acquireSessionLease({ agentDir, sessionFile, facts, now: () => clock });
    if (!acquired.ok) throw new Error(acquired.message);
    clock = new Date(T0.getTime() + 5_000);
    expect(await acquired.lease.heartbeat()).toBe("held");
    expect(JSON.parse(await readFile(leasePath(agentDir, sessionFile), "utf8")).heartbeatAt).toBe(clock.toISOString());

    // Someone (another host's Pi with a stale view, say) replaced the file.
    const intruder = { ...acquired.lease.record, pid: otherProcess(), acquiredAt: "2026-12-01T09:00:00.000Z" };
    await writeFile(leasePath(agentDir, sessionFile), JSON.stringify(intruder));
    expect(await acquired.lease.heartbeat()).toBe("lost");
    await acquired.lease.release();
    expect(JSON.parse(await readFile(leasePath(agentDir, sessionFile), "utf8"))).toEqual(intruder);
  });
});

describe("SessionLeaseKeeper and the session start", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), "phw-keeper-")));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** This process and another live Pi (pid 777), in a fake process table, and one session for both. */
  function twoPi() {
    const facts = new FakeProcessFacts([
      { pid: process.pid, start: "boot/1" },
      { pid: 777, start: "boot/2" },
    ]);
    return { facts, agentDir: join(dir, "agent"), sessionFile: join(dir, "s.jsonl") };
  }

  it("waits while another Pi holds the session and takes it over on the first tick after it stopped", async () => {
    const { facts, agentDir, sessionFile } = twoPi();
    const first = await acquireSessionLease({ agentDir, sessionFile, pid: 777, facts });
    expect(first.ok).toBe(true);
    const events: LeaseEvent[] = [];
    const holding: boolean[] = [];
    const keeper = new SessionLeaseKeeper({
      agentDir,
      facts,
      intervalMs: 60_000,
      onEvent: (event) => events.push(event),
      onHoldingChange: (now) => holding.push(now),
    });
    const held = await keeper.hold(sessionFile);
    expect(held).toMatchObject({ ok: false, code: "held" });
    expect(keeper.holding).toBe(false);
    // Not holding: the published state of this Pi is not written (child/child-state.ts).
    expect(holding).toEqual([]);

    await keeper.tick();
    expect(events).toEqual([]);
    facts.remove(777);
    await keeper.tick();
    expect(events).toEqual([
      {
        code: "taken_over",
        message: `The other Pi on session ${sessionFile} has stopped; this Pi now holds the session.`,
      },
    ]);
    expect(keeper.holding).toBe(true);
    expect(holding).toEqual([true]);
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toMatchObject({ state: "live", pid: process.pid });

    await keeper.release();
    expect(holding).toEqual([true, false]);
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toEqual({ state: "none" });
  });

  it("at exit, tells the holder's last word while the lease is still held, then releases it", async () => {
    const { facts, agentDir, sessionFile } = twoPi();
    const seen: string[] = [];
    const keeper = new SessionLeaseKeeper({
      agentDir,
      facts,
      intervalMs: 60_000,
      onEvent: () => undefined,
      onHoldingChange: (now) => seen.push(`holding ${now}`),
      onExit: (code) =>
        seen.push(`exit ${code} while the lease is ${existsSync(leasePath(agentDir, sessionFile)) ? "there" : "gone"}`),
    });
    expect(await keeper.hold(sessionFile)).toMatchObject({ ok: true });
    keeper.exitSync(143);
    expect(seen).toEqual(["holding true", "exit 143 while the lease is there", "holding false"]);
    expect(existsSync(leasePath(agentDir, sessionFile))).toBe(false);
    // A keeper that holds nothing has no last word to tell.
    const idle = new SessionLeaseKeeper({ agentDir, facts, onEvent: () => undefined, onExit: () => seen.push("exit") });
    idle.exitSync(0);
    expect(seen).toHaveLength(3);
  });

  it("a lease that could not be written at start is taken on a later tick, and said so without blaming another Pi", async () => {
    const { facts, agentDir, sessionFile } = twoPi();
    // Something in the way of the lease directory: the lease cannot be written.
    await mkdir(join(agentDir, "handoff-worktree"), { recursive: true });
    await writeFile(leaseDir(agentDir), "not a directory\n");
    const events: LeaseEvent[] = [];
    const keeper = new SessionLeaseKeeper({
      agentDir,
      facts,
      intervalMs: 60_000,
      onEvent: (event) => events.push(event),
    });
    expect(await keeper.hold(sessionFile)).toMatchObject({ ok: false, code: "io_error" });
    await keeper.tick();
    expect(events).toEqual([]);
    await rm(leaseDir(agentDir));
    await keeper.tick();
    expect(events).toEqual([
      {
        code: "leased",
        message: `The lease on session ${sessionFile} is taken now, so recovery sees this Pi as its writer.`,
      },
    ]);
    expect(await readSessionLease(agentDir, sessionFile, { facts })).toMatchObject({ state: "live", pid: process.pid });
    await keeper.release();
  });

  it("a lease that could not be written at start, then held by another Pi, is taken over once that Pi stops, and said so", async () => {
    const { facts, agentDir, sessionFile } = twoPi();
    await mkdir(join(agentDir, "handoff-worktree"), { recursive: true });
    await writeFile(leaseDir(agentDir), "not a directory\n");
    const events: LeaseEvent[] = [];
    const keeper = new SessionLeaseKeeper({
      agentDir,
      facts,
      intervalMs: 60_000,
      onEvent: (event) => events.push(event),
    });
    expect(await keeper.hold(sessionFile)).toMatchObject({ ok: false, code: "io_error" });
    // The directory works again, and another Pi takes the lease before this one's next tick.
    await rm(leaseDir(agentDir));
    const other = await acquireSessionLease({ agentDir, sessionFile, pid: 777, facts });
    if (!other.ok) throw new Error(other.message);
    await keeper.tick();
    expect(events).toEqual([]);
    facts.remove(777);
    await keeper.tick();
    expect(events).toEqual([
      {
        code: "taken_over",
        message: `The other Pi on session ${sessionFile} has stopped; this Pi now holds the session.`,
      },
    ]);
    await keeper.release();
  });

  it("once another Pi was seen holding the lease, an I/O error meanwhile does not change what the takeover says", async () => {
    const { facts, agentDir, sessionFile } = twoPi();
    const other = await acquireSessionLease({ agentDir, sessionFile, pid: 777, facts });
    if (!other.ok) throw new Error(other.message);
    const events: LeaseEvent[] = [];
    const keeper = new SessionLeaseKeeper({
      agentDir,
      facts,
      intervalMs: 60_000,
      onEvent: (event) => events.push(event),
    });
    expect(await keeper.hold(sessionFile)).toMatchObject({ ok: false, code: "held" });
    // The other Pi stops and its lease goes, while the lease directory cannot be used: an I/O error.
    facts.remove(777);
    await rm(leaseDir(agentDir), { recursive: true });
    await writeFile(leaseDir(agentDir), "not a directory\n");
    await keeper.tick();
    expect(events).toEqual([]);
    await rm(leaseDir(agentDir));
    await keeper.tick();
    expect(events).toEqual([
      {
        code: "taken_over",
        message: `The other Pi on session ${sessionFile} has stopped; this Pi now holds the session.`,
      },
    ]);
    await keeper.release();
  });

  it("in a second Pi on a leased handoff session: warns, does not acknowledge and starts no turn", async () => {
    const { facts, agentDir, sessionFile } = twoPi();
    await acquireSessionLease({ agentDir, sessionFile, pid: 777, handoffId: "h-1", facts });
    const keeper = new SessionLeaseKeeper({ agentDir, facts, intervalMs: 60_000, onEvent: () => undefined });
    const store = ManifestStore.forAgentDir(agentDir);
    const details = {
      handoffId: "h-1",
      manifestPath: join(agentDir, "handoff-worktree", "manifests", "h-1.json"),
      branch: "b",
      baseRef: "main",
      baseSha: "0".repeat(40),
      worktreePath: dir,
      mainCheckout: dir,
      parentSessionFile: join(dir, "parent.jsonl"),
      hasTask: true,
      taskOmittedChars: 0,
      redactions: {},
    };
    const branch = [{ type: "custom_message", customType: HANDOFF_MESSAGE_TYPE, details }];
    expect(findHandoffDetails(branch)).toEqual(details);
    const started = await startOnSession({ keeper, store, branch, sessionFile, pid: process.pid, now: () => T0 });
    await keeper.release();
    expect(started.ack).toBeUndefined();
    expect(started.kickoff).toBeUndefined();
    expect(started.warning).toMatch(
      /^Another Pi \(pid 777\) holds the lease on session .* Two Pi processes writing one session file corrupt it: quit this one \(\/quit\)/,
    );
    // Nothing was written for the handoff (no manifest store directory was even created).
    expect(await readdir(join(agentDir, "handoff-worktree"))).toEqual(["leases"]);
  });
});
