/**
 * One session's lineage adoption (src/adoption/session.ts) on a fake host and a scripted source,
 * without Pi: the resume message at the scan's end when idle, nothing while busy until the agent
 * settles, one completion when a watched run ends, nothing delivered twice across sessions (the
 * ledger), and nothing at all once stopped before the scan.
 */
import { describe, expect, it, vi } from "vitest";
import type { DeliveryMessage } from "../../src/adoption/delivery.ts";
import { LINEAGE_LEDGER_TYPE } from "../../src/adoption/ledger.ts";
import { LINEAGE_MESSAGE_TYPE } from "../../src/adoption/messages.ts";
import { hasLineage, kickoffExpected } from "../../src/adoption/branch-facts.ts";
import { LineageSession, type LineageHost } from "../../src/adoption/session.ts";
import type { AdoptedRun, LineageEntryView, LineageSource, RunOutcome } from "../../src/adoption/types.ts";

function run(runId: string, outcome: RunOutcome): AdoptedRun {
  return {
    source: "pi-subagents",
    runId,
    outcome,
    state: outcome === "active" ? "running" : "complete",
    title: `chain: ${runId}`,
    owner: { key: "parent", depth: 1 },
    paths: { outputs: [], sessionFiles: [] },
    inspect: [],
  };
}

/** A source whose scan finds `runs` and whose refresh reports `ended` for every run it is asked about. */
function scriptedSource(runs: AdoptedRun[], ended: RunOutcome = "finished"): LineageSource & { scans: number } {
  const source = {
    name: "pi-subagents" as const,
    scans: 0,
    async scan() {
      source.scans++;
      return { runs, notes: [] };
    },
    async refresh(asked: readonly AdoptedRun[]) {
      return { runs: asked.map((r) => ({ ...r, outcome: ended, state: "complete" })), notes: [] };
    },
  };
  return source;
}

interface FakeHost extends LineageHost {
  idle: boolean;
  sent: DeliveryMessage[];
  appended: { customType: string; data: unknown }[];
}

function fakeHost(entries: LineageEntryView[] = [], branch: LineageEntryView[] = []): FakeHost {
  const host: FakeHost = {
    idle: true,
    sent: [],
    appended: [],
    send: (message) => {
      host.sent.push(message);
    },
    appendEntry: (customType, data) => {
      host.appended.push({ customType, data });
    },
    isIdle: () => host.idle,
    entries: () => entries,
    branch: () => branch,
    identity: () => ({ sessionId: "child", parentSession: "/nonexistent/parent.jsonl" }),
  };
  return host;
}

describe("LineageSession", () => {
  it("says the resume at the scan's end when idle, then one completion when a watched run ends", async () => {
    const host = fakeHost();
    const session = new LineageSession(host, {
      sources: [scriptedSource([run("a", "active"), run("b", "finished")])],
      pollMs: 20,
    });
    session.start();
    await vi.waitFor(() => expect(host.sent.length).toBe(2), { timeout: 5_000 });
    session.stop();
    expect(host.sent.map((message) => message.customType)).toEqual([LINEAGE_MESSAGE_TYPE, LINEAGE_MESSAGE_TYPE]);
    expect(host.appended.map((entry) => entry.customType)).toEqual([LINEAGE_LEDGER_TYPE, LINEAGE_LEDGER_TYPE]);
    expect(session.hasScanned).toBe(true);
    expect(session.adoptedRuns().map((r) => [r.runId, r.outcome])).toEqual([
      ["a", "finished"],
      ["b", "finished"],
    ]);
  });

  it("delivers nothing while the agent is busy, and what waits once it settles", async () => {
    const host = fakeHost();
    host.idle = false;
    const session = new LineageSession(host, { sources: [scriptedSource([run("b", "finished")])], pollMs: 60_000 });
    session.start();
    await vi.waitFor(() => expect(session.hasScanned).toBe(true), { timeout: 5_000 });
    expect(host.sent).toEqual([]);
    host.idle = true;
    session.onSettled();
    expect(host.sent.length).toBe(1);
    session.stop();
  });

  it("delivers nothing a session's ledger already holds", async () => {
    const first = fakeHost();
    const runs = [run("b", "finished")];
    const one = new LineageSession(first, { sources: [scriptedSource(runs)], pollMs: 60_000 });
    one.start();
    await vi.waitFor(() => expect(first.sent.length).toBe(1), { timeout: 5_000 });
    one.stop();
    const inherited = first.appended.map(({ customType, data }) => ({ type: "custom", customType, data }));
    const second = fakeHost(inherited);
    const two = new LineageSession(second, { sources: [scriptedSource(runs)], pollMs: 60_000 });
    two.start();
    await vi.waitFor(() => expect(two.hasScanned).toBe(true), { timeout: 5_000 });
    two.stop();
    expect(second.sent).toEqual([]);
  });

  it("stopped before its scan, reads and says nothing", async () => {
    const host = fakeHost();
    const source = scriptedSource([run("b", "finished")]);
    const session = new LineageSession(host, { sources: [source], pollMs: 60_000 });
    session.start();
    session.stop();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(source.scans).toBe(0);
    expect(host.sent).toEqual([]);
  });

  it("has a lineage with a parent or a handoff message, and expects no kickoff without a handoff", () => {
    expect(hasLineage("/p.jsonl", [])).toBe(true);
    expect(hasLineage(undefined, [])).toBe(false);
    expect(hasLineage("", [])).toBe(false);
    expect(kickoffExpected([])).toBe(false);
  });
});
