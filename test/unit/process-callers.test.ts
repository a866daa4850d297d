/**
 * What the callers of the process-facts port decide when a fact is missing or says "another
 * process": never the unsafe side (a reused pid is not the owner; an unknown start is not proof of
 * reuse; an unreadable table is a problem, not "no Pi").
 */
import { describe, expect, it } from "vitest";
import { isOwnerAlive, ownerOf } from "../../src/manifest/owner.ts";
import { pidLiveness } from "../../src/adoption/liveness.ts";
import { scanPiProcesses } from "../../src/inventory/processes.ts";
import { FakeProcessFacts } from "../support/fake-process-facts.ts";

describe("owners", () => {
  it("records the start token, and tells a reused pid from the owner", async () => {
    const facts = new FakeProcessFacts([{ pid: 10, start: "boot/100" }]);
    const owner = await ownerOf(10, facts);
    expect(owner).toEqual({ pid: 10, start: "boot/100" });
    expect(await isOwnerAlive(owner, facts)).toBe(true);
    facts.add({ pid: 10, start: "boot/999" });
    expect(await isOwnerAlive(owner, facts)).toBe(false);
    facts.remove(10);
    expect(await isOwnerAlive(owner, facts)).toBe(false);
  });

  it("counts a live pid as the owner when its start cannot be compared (unreadable, or read the other way)", async () => {
    const facts = new FakeProcessFacts([{ pid: 10 }]);
    expect(await isOwnerAlive({ pid: 10, start: "boot/100" }, facts)).toBe(true);
    facts.add({ pid: 10, start: "ps:1764576000" });
    expect(await isOwnerAlive({ pid: 10, start: "boot/100" }, facts)).toBe(true);
    facts.add({ pid: 10, zombie: true });
    expect(await isOwnerAlive({ pid: 10 }, facts)).toBe(false);
  });
});

describe("lineage liveness", () => {
  it("calls a pid started after the run a reused one, and trusts the pid alone when no start time can be read", async () => {
    const runStarted = Date.UTC(2026, 11, 1, 8, 0, 0);
    // process.pid is alive for the signal check; the fake decides its start time.
    const facts = new FakeProcessFacts([{ pid: process.pid, startedAtMs: runStarted + 60_000 }]);
    expect(await pidLiveness(process.pid, runStarted, facts)).toBe("dead");
    facts.add({ pid: process.pid, startedAtMs: runStarted + 1_000 });
    expect(await pidLiveness(process.pid, runStarted, facts)).toBe("alive");
    facts.add({ pid: process.pid });
    expect(await pidLiveness(process.pid, runStarted, facts)).toBe("alive");
    expect(await pidLiveness(undefined, runStarted, facts)).toBe("unknown");
  });
});

describe("recovery's process scan", () => {
  it("reports an unreadable table as a problem instead of an empty answer", async () => {
    const facts = new FakeProcessFacts([{ pid: 5, name: "pi", cwd: "/w" }]);
    expect(await scanPiProcesses(facts)).toEqual({ piProcesses: [{ pid: 5, name: "pi", cwd: "/w" }] });
    facts.tableProblem = "Running processes could not be looked for: ps is not installed.";
    expect(await scanPiProcesses(facts)).toEqual({
      piProcesses: [],
      problem: "Running processes could not be looked for: ps is not installed.",
    });
  });
});
