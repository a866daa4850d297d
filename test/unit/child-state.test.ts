/**
 * A Pi's published state (src/child/child-state.ts): the reducer over Pi's events, and the
 * publisher's writes on a real directory: only while the lease is held, one write per change,
 * `since` moving only with the state, the last word at exit, and a file that does not parse
 * counting as no word. Also Herdr's sidebar reporter (src/mux/herdr/sidebar-report.ts).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  ChildActivity,
  ChildStatePublisher,
  takeStartedMarker,
  childStateDir,
  childStatePath,
  readChildState,
  type ActivityEvent,
  type ChildStateFile,
} from "../../src/child/child-state.ts";
import { leasePath } from "../../src/child/lease.ts";
import { SidebarReporter, sidebarMode, type SidebarPort } from "../../src/mux/herdr/sidebar-report.ts";
import { herdrPiIntegrationInstalled } from "../../src/mux/herdr/herdr.ts";

const dir = mkdtempSync(join(tmpdir(), "phw-child-state-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function reduce(events: ActivityEvent[]): ReturnType<ChildActivity["snapshot"]> {
  const activity = new ChildActivity();
  for (const event of events) activity.apply(event);
  return activity.snapshot();
}

describe("ChildActivity", () => {
  it("is starting until ready, idle after, working in a run with the tool running", () => {
    expect(reduce([{ type: "session_start" }])).toEqual({ state: "starting" });
    expect(reduce([{ type: "session_start" }, { type: "ready" }])).toEqual({ state: "idle" });
    const run: ActivityEvent[] = [{ type: "ready" }, { type: "agent_start" }];
    expect(reduce(run)).toEqual({ state: "working" });
    expect(reduce([...run, { type: "tool_start", id: "t1", name: "bash" }])).toEqual({
      state: "working",
      tool: "bash",
    });
    // Parallel tools: the latest still running is named; none once they ended.
    expect(
      reduce([
        ...run,
        { type: "tool_start", id: "t1", name: "bash" },
        { type: "tool_start", id: "t2", name: "read" },
        { type: "tool_end", id: "t2" },
      ]),
    ).toEqual({ state: "working", tool: "bash" });
    expect(reduce([...run, { type: "tool_start", id: "t1", name: "bash" }, { type: "tool_end", id: "t1" }])).toEqual({
      state: "working",
    });
    // A settled run forgets tools whose end was never told.
    expect(reduce([...run, { type: "tool_start", id: "t1", name: "bash" }, { type: "agent_settled" }])).toEqual({
      state: "idle",
    });
  });

  it("tells a dialog from a question a tool asked, and prompts and compaction beat a run", () => {
    expect(reduce([{ type: "ready" }, { type: "prompt_start", kind: "select" }])).toEqual({
      state: "waiting_input",
      prompt: "select",
    });
    const asking: ActivityEvent[] = [
      { type: "ready" },
      { type: "agent_start" },
      { type: "tool_start", id: "t1", name: "ask_user" },
      { type: "prompt_start", kind: "input" },
    ];
    expect(reduce(asking)).toEqual({ state: "waiting_input", prompt: "input", question: true });
    expect(reduce([...asking, { type: "prompt_end" }])).toEqual({ state: "working", tool: "ask_user" });
    expect(reduce([{ type: "ready" }, { type: "agent_start" }, { type: "compact_start" }])).toEqual({
      state: "compacting",
    });
    expect(reduce([{ type: "ready" }, { type: "compact_start" }, { type: "compact_end" }])).toEqual({ state: "idle" });
  });

  it("moved and exited are final words, exited the last", () => {
    expect(reduce([{ type: "ready" }, { type: "agent_start" }, { type: "moved", to: "/s/new.jsonl" }])).toEqual({
      state: "moved",
      movedTo: "/s/new.jsonl",
    });
    expect(reduce([{ type: "ready" }, { type: "moved", to: "/s/new.jsonl" }, { type: "exit", code: 143 }])).toEqual({
      state: "exited",
      exitCode: 143,
    });
  });
});

/** A clock the test moves. */
function clock(start = Date.parse("2026-12-01T08:00:00.000Z")) {
  let now = start;
  return { now: () => new Date(now), advance: (ms: number) => (now += ms) };
}

function onDisk(agentDir: string, session: string): ChildStateFile {
  return JSON.parse(readFileSync(childStatePath(agentDir, session), "utf8")) as ChildStateFile;
}

describe("ChildStatePublisher", () => {
  it("writes only while the lease is held, once per change, with since moving only with the state", async () => {
    const agentDir = join(dir, "agent-pub");
    const session = join(dir, "pub.jsonl");
    writeFileSync(session, "");
    const time = clock();
    const written: ChildStateFile[] = [];
    const publisher = new ChildStatePublisher({
      agentDir,
      now: time.now,
      pid: 4242,
      host: "here",
      onPublished: (record) => written.push(record),
    });
    publisher.begin(session, "h-1");
    publisher.apply({ type: "ready" });
    await publisher.flush();
    // No lease yet: nothing at all was written.
    expect(written).toEqual([]);
    expect((await readChildState(agentDir, session)).code).toBe("none");

    time.advance(1_000);
    publisher.setHolding(true);
    await publisher.flush();
    expect(onDisk(agentDir, session)).toMatchObject({
      version: 1,
      pid: 4242,
      host: "here",
      handoffId: "h-1",
      state: "idle",
      since: "2026-12-01T08:00:00.000Z",
      seq: 1,
      writtenAt: "2026-12-01T08:00:01.000Z",
    });
    // Beside the lease: the same key.
    expect(childStatePath(agentDir, session).split("/").at(-1)).toBe(leasePath(agentDir, session).split("/").at(-1));

    time.advance(1_000);
    publisher.apply({ type: "agent_start" });
    await publisher.flush();
    time.advance(1_000);
    publisher.apply({ type: "tool_start", id: "t1", name: "bash" });
    // An event that changes nothing is not written.
    publisher.apply({ type: "agent_start" });
    await publisher.flush();
    expect(written.map((record) => [record.seq, record.state, record.since, record.tool])).toEqual([
      [1, "idle", "2026-12-01T08:00:00.000Z", undefined],
      [2, "working", "2026-12-01T08:00:02.000Z", undefined],
      [3, "working", "2026-12-01T08:00:02.000Z", "bash"],
    ]);
    // The state file is the only file left in the directory (no temp files).
    expect(readdirSync(childStateDir(agentDir))).toEqual([childStatePath(agentDir, session).split("/").at(-1)]);

    // The lease lost: nothing more is written; taken again: the current state at once.
    publisher.setHolding(false);
    publisher.apply({ type: "agent_settled" });
    await publisher.flush();
    expect(onDisk(agentDir, session).state).toBe("working");
    publisher.setHolding(true);
    await publisher.flush();
    expect(onDisk(agentDir, session)).toMatchObject({ state: "idle", seq: 4 });

    // The last word at exit, synchronously.
    time.advance(500);
    publisher.exitSync(0);
    expect(onDisk(agentDir, session)).toMatchObject({
      state: "exited",
      exitCode: 0,
      since: "2026-12-01T08:00:03.500Z",
    });
  });

  it("writes in order and only the latest of a burst, and reports a failed write once", async () => {
    const agentDir = join(dir, "agent-burst");
    const session = join(dir, "burst.jsonl");
    const written: string[] = [];
    const errors: string[] = [];
    const publisher = new ChildStatePublisher({
      agentDir,
      onPublished: (record) => written.push(record.state),
      onError: (message) => errors.push(message),
    });
    publisher.begin(session, "h-1");
    publisher.setHolding(true);
    publisher.apply({ type: "ready" });
    publisher.apply({ type: "agent_start" });
    publisher.apply({ type: "prompt_start", kind: "confirm" });
    await publisher.flush();
    // The first write was in flight; of the three asked behind it only the last was written.
    expect(written).toEqual(["starting", "waiting_input"]);
    expect(onDisk(agentDir, session).state).toBe("waiting_input");

    // A directory that cannot be written: told once, never thrown.
    const blocked = join(dir, "agent-blocked");
    mkdirSync(join(blocked, "handoff-worktree"), { recursive: true });
    writeFileSync(join(blocked, "handoff-worktree", "states"), "a file where the directory would be");
    const failing = new ChildStatePublisher({ agentDir: blocked, onError: (message) => errors.push(message) });
    failing.begin(session, "h-1");
    failing.setHolding(true);
    failing.apply({ type: "ready" });
    await failing.flush();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^The state of this Pi could not be published to .*: .*; its parent falls back to reading the session\.$/,
    );
  });

  it("only a handoff's child publishes: any other Pi leaves no file; a child is followed to where it moves", async () => {
    const agentDir = join(dir, "agent-plain");
    const plain = join(dir, "plain.jsonl");
    const publisher = new ChildStatePublisher({ agentDir });
    publisher.begin(plain);
    publisher.setHolding(true);
    publisher.apply({ type: "ready" });
    publisher.apply({ type: "agent_start" });
    await publisher.flush();
    publisher.exitSync(0);
    // Its state is known (for its terminal), and nothing was written.
    expect(publisher.current?.state).toBe("working");
    expect(existsSync(childStateDir(agentDir))).toBe(false);

    // A Pi that begins a handoff's session publishes it, and the session it moves to (/new).
    const child = new ChildStatePublisher({ agentDir });
    const handed = join(dir, "handed.jsonl");
    const next = join(dir, "next.jsonl");
    child.begin(handed, "h-2");
    child.setHolding(true);
    child.apply({ type: "ready" });
    child.apply({ type: "moved", to: next });
    await child.flush();
    child.begin(next);
    child.apply({ type: "ready" });
    await child.flush();
    expect(onDisk(agentDir, handed)).toMatchObject({ handoffId: "h-2", state: "moved" });
    expect(onDisk(agentDir, next)).toMatchObject({ state: "idle" });
    expect(readdirSync(childStateDir(agentDir)).sort()).toEqual(
      [childStatePath(agentDir, handed), childStatePath(agentDir, next)].map((path) => path.split("/").at(-1)).sort(),
    );

    // A Pi started for a handoff (its marker in the environment) publishes whatever its session
    // names: the session it moved to, with its extension loaded again in the same process, included.
    // The marker is taken out of the environment its children inherit, and kept for the process.
    const env: NodeJS.ProcessEnv = { PI_HANDOFF_ID: "h-3", OTHER: "kept" };
    const thisProcess = {};
    expect(takeStartedMarker(env, thisProcess)).toBe("h-3");
    expect(env).toEqual({ OTHER: "kept" });
    expect(takeStartedMarker(env, thisProcess)).toBe("h-3");
    expect([takeStartedMarker({}, {}), takeStartedMarker({ PI_HANDOFF_ID: "" }, {})]).toEqual([undefined, undefined]);
    const moved = join(dir, "moved.jsonl");
    const reloaded = new ChildStatePublisher({ agentDir });
    reloaded.begin(moved, undefined, takeStartedMarker(env, thisProcess) !== undefined);
    reloaded.setHolding(true);
    reloaded.apply({ type: "ready" });
    await reloaded.flush();
    expect(onDisk(agentDir, moved)).toMatchObject({ state: "idle" });
  });

  it("a file that does not parse is no word at all", async () => {
    const agentDir = join(dir, "agent-bad");
    const session = join(dir, "bad.jsonl");
    mkdirSync(childStateDir(agentDir), { recursive: true });
    writeFileSync(childStatePath(agentDir, session), "{not json");
    expect(await readChildState(agentDir, session)).toMatchObject({ code: "unreadable" });
    writeFileSync(childStatePath(agentDir, session), JSON.stringify({ version: 1, state: "idle" }));
    expect(await readChildState(agentDir, session)).toMatchObject({
      code: "unreadable",
      message: expect.stringMatching(/does not have the expected fields\.$/),
    });
  });
});

describe("SidebarReporter", () => {
  it("reports the session first, then only changes in Herdr's words, with strictly growing sequence numbers", async () => {
    const calls: string[] = [];
    let resolveFirst: () => void = () => {};
    const port: SidebarPort = {
      reportSessionStart: async (report) => {
        calls.push(`session ${report.seq} ${report.sessionFile} ${report.startSource ?? "-"}`);
        await new Promise<void>((resolve) => (resolveFirst = resolve));
      },
      reportState: async (report) => {
        calls.push(`state ${report.seq} ${report.state} ${report.sessionFile ?? "-"}`);
      },
    };
    const reporter = new SidebarReporter(port, () => 1000);
    reporter.sessionStarted("/s/a.jsonl", "startup");
    reporter.published("starting");
    reporter.published("idle");
    reporter.published("working");
    // Compacting is working to Herdr: nothing new to say.
    reporter.published("compacting");
    // While the session report is in flight only the latest state waits.
    resolveFirst();
    await reporter.flush();
    reporter.published("waiting_input");
    reporter.published("exited");
    await reporter.flush();
    expect(calls).toEqual([
      "session 1000000 /s/a.jsonl startup",
      "state 1000002 working /s/a.jsonl",
      "state 1000003 blocked /s/a.jsonl",
    ]);
    // A session start Herdr does not know (reload) is sent without a source; the next state goes whatever the last was.
    reporter.sessionStarted("/s/a.jsonl", "reload");
    resolveFirst();
    reporter.published("waiting_input");
    await reporter.flush();
    expect(calls.slice(3)).toEqual(["session 1000004 /s/a.jsonl -", "state 1000005 blocked /s/a.jsonl"]);
  });

  it("reports only in a Herdr pane of a TUI Pi, and leaves prompts to Herdr's own integration where it runs", () => {
    const pane = { HERDR_ENV: "1", HERDR_PANE_ID: "w1:p1", HERDR_SOCKET_PATH: "/run/herdr.sock" };
    expect(sidebarMode(pane, { tui: true, integrationInstalled: false })).toBe("report");
    expect(sidebarMode(pane, { tui: true, integrationInstalled: true })).toBe("integration");
    expect(sidebarMode(pane, { tui: false, integrationInstalled: false })).toBe("none");
    expect(sidebarMode({ ...pane, HERDR_ENV: "0" }, { tui: true, integrationInstalled: false })).toBe("none");
    expect(sidebarMode({ ...pane, HERDR_PANE_ID: "" }, { tui: true, integrationInstalled: false })).toBe("none");
  });

  it("knows Herdr's own Pi integration by the file Herdr installs and its mark", () => {
    const agentDir = join(dir, "agent-integration");
    expect(herdrPiIntegrationInstalled(agentDir)).toBe(false);
    mkdirSync(join(agentDir, "extensions"), { recursive: true });
    writeFileSync(join(agentDir, "extensions", "herdr-agent-state.ts"), "// someone else's file of that name\n");
    expect(herdrPiIntegrationInstalled(agentDir)).toBe(false);
    writeFileSync(
      join(agentDir, "extensions", "herdr-agent-state.ts"),
      "// installed by herdr\n// HERDR_INTEGRATION_ID=pi\n// HERDR_INTEGRATION_VERSION=8\n",
    );
    expect(herdrPiIntegrationInstalled(agentDir)).toBe(true);
  });
});
