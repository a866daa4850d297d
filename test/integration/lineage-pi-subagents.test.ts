/**
 * Lineage adoption against pi-subagents run trees written by the real package's writer code, for a
 * three-level lineage made with Pi's real SessionManager forks: which runs are active, interrupted,
 * finished, skipped as delivered before the fork, or ignored as another session's; and what a later
 * refresh reports once an adopted run finishes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSessionHeader } from "../../src/session/header.ts";
import { walkLineage, type Lineage } from "../../src/adoption/ancestry.ts";
import { newlyEnded, refreshRuns, scanSources, selectForResume, selectWatched } from "../../src/adoption/scan.ts";
import { indexSegment, indexSegmentAliases } from "../../src/adoption/sources/pi-subagents-layout.ts";
import { piSubagentsSource } from "../../src/adoption/sources/pi-subagents.ts";
import { deliveryKey, type AdoptedRun, type ScanContext } from "../../src/adoption/types.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { createRootSession, forkSession, ProcessPool, type SessionLink } from "../support/lineage.ts";
import {
  loadPiSubagentsWriters,
  PiSubagentsFixture,
  type PiSubagentsWriters,
} from "../support/pi-subagents-fixtures.ts";

const outcomes = (runs: readonly AdoptedRun[]) => Object.fromEntries(runs.map((run) => [run.runId, run.outcome]));

describe("pi-subagents runs across a three-level lineage", () => {
  let dir: string;
  let writers: PiSubagentsWriters;
  let fixture: PiSubagentsFixture;
  let processes: ProcessPool;
  let grandparent: SessionLink;
  let parent: SessionLink;
  let child: SessionLink;
  let lineage: Lineage;
  let context: ScanContext;
  let livePid: number;
  let childRunnerPid: number;
  const previousRoot = process.env.PI_SUBAGENTS_TEMP_ROOT;

  beforeAll(async () => {
    dir = makeTempDir("phw-lineage-");
    const root = join(dir, "pi-subagents");
    // The package reads its root from the environment when its modules load.
    process.env.PI_SUBAGENTS_TEMP_ROOT = root;
    writers = await loadPiSubagentsWriters();
    fixture = new PiSubagentsFixture(root, writers);
    processes = new ProcessPool();

    grandparent = createRootSession(dir, join(dir, "repo"));
    // Runs of the grandparent that ended before the parent was forked from it.
    const longAgo = grandparent.createdAt - 60_000;
    fixture.startRun({
      runId: "gp-delivered-removed",
      sessionId: grandparent.file,
      pid: processes.dead(),
      startedAt: longAgo - 1000,
    });
    fixture.finishRun("gp-delivered-removed", { endedAt: longAgo, delivery: "removed" });
    fixture.startRun({
      runId: "gp-delivered-marked",
      sessionId: grandparent.file,
      pid: processes.dead(),
      startedAt: longAgo - 1000,
    });
    fixture.finishRun("gp-delivered-marked", { endedAt: longAgo, delivery: "marked" });
    fixture.startRun({
      runId: "gp-undelivered",
      sessionId: grandparent.file,
      agents: ["scout", "planner"],
      pid: processes.dead(),
      startedAt: longAgo - 1000,
    });
    fixture.finishRun("gp-undelivered", { endedAt: longAgo, summary: "Found three call sites of parseArgs." });

    await new Promise((resolve) => setTimeout(resolve, 20));
    parent = forkSession(grandparent, dir, join(dir, "wt-parent"), "parent");
    // A grandparent run consumed by the grandparent's Pi after the parent was forked off: never seen below.
    fixture.startRun({
      runId: "gp-consumed-after-fork",
      sessionId: grandparent.file,
      pid: processes.dead(),
      startedAt: parent.createdAt - 500,
    });
    fixture.finishRun("gp-consumed-after-fork", {
      endedAt: parent.createdAt + 5,
      delivery: "removed",
      summary: "late",
    });

    livePid = processes.live();
    fixture.startRun({
      runId: "gp-active-chain",
      sessionId: grandparent.file,
      agents: ["scout", "worker", "reviewer"],
      mode: "chain",
      pid: livePid,
    });

    // A scripted workflow of the parent: it ran inside the parent's Pi (now gone), with two children.
    childRunnerPid = processes.live();
    fixture.startRun({
      runId: "p-workflow",
      sessionId: parent.file,
      mode: "workflow",
      agents: ["impl", "tests"],
      pid: processes.dead(),
      childRunIds: ["p-wf-child-running", "p-wf-child-done"],
    });
    fixture.startRun({
      runId: "p-wf-child-running",
      sessionId: parent.file,
      agents: ["impl"],
      pid: childRunnerPid,
      parentWorkflowRunId: "p-workflow",
    });
    fixture.startRun({
      runId: "p-wf-child-done",
      sessionId: parent.file,
      agents: ["tests"],
      pid: processes.dead(),
      parentWorkflowRunId: "p-workflow",
    });
    fixture.finishRun("p-wf-child-done", { resultLocation: "workflow-child", summary: "tests pass" });
    // A detached runner of the parent that died without a result.
    fixture.startRun({ runId: "p-runner-died", sessionId: parent.file, pid: processes.dead() });
    // This process's own pi-subagents run: left to pi-subagents.
    fixture.startRun({
      runId: "p-own-process",
      sessionId: parent.file,
      pid: processes.live(),
      completionOwnerId: "this-process-owner",
    });

    // Another session's runs, active and finished: never adopted.
    const stranger = join(dir, "sessions-other", "2026-01-01T00-00-00-000Z_other.jsonl");
    fixture.startRun({ runId: "other-active", sessionId: stranger, pid: processes.live() });
    fixture.startRun({ runId: "other-finished", sessionId: stranger, pid: processes.dead() });
    fixture.finishRun("other-finished");

    // A status file that is not JSON, behind an active marker.
    mkdirSync(join(fixture.runsDir, "broken-run"), { recursive: true });
    writeFileSync(join(fixture.runsDir, "broken-run", "status.json"), "{ not json");
    writeFileSync(join(fixture.runsDir, ".active-runs", "broken-run"), "");

    await new Promise((resolve) => setTimeout(resolve, 20));
    child = forkSession(parent, dir, join(dir, "wt-child"), "child");
    const header = readSessionHeader(child.file);
    if (!header.ok) throw new Error(header.message);
    lineage = walkLineage({
      sessionFile: child.file,
      sessionId: child.id,
      parentSession: header.header.parentSession,
      timestamp: header.header.timestamp,
    });
    context = {
      lineage,
      branch: [],
      env: { PI_SUBAGENTS_TEMP_ROOT: root },
      agentDir: join(dir, "agent"),
      now: Date.now(),
      ownCompletionOwnerId: "this-process-owner",
    };
  });

  afterAll(() => {
    processes?.killAll();
    if (previousRoot === undefined) delete process.env.PI_SUBAGENTS_TEMP_ROOT;
    else process.env.PI_SUBAGENTS_TEMP_ROOT = previousRoot;
    if (dir !== undefined) removeTempDir(dir);
  });

  it("walks the lineage from the child's header: parent, then grandparent, with fork times", () => {
    expect(lineage.ancestors.map((a) => [a.depth, a.sessionFile, a.sessionId, a.found])).toEqual([
      [1, parent.file, parent.id, "file"],
      [2, grandparent.file, grandparent.id, "file"],
    ]);
    expect(lineage.ancestors.map((a) => a.forkedAt)).toEqual([child.createdAt, parent.createdAt]);
    expect(lineage.notes).toEqual([]);
  });

  it("classifies every run exactly", async () => {
    const scan = await scanSources([piSubagentsSource()], context);
    expect(outcomes(scan.runs)).toEqual({
      "gp-undelivered": "finished",
      "gp-consumed-after-fork": "finished",
      "gp-active-chain": "active",
      "p-workflow": "interrupted",
      "p-wf-child-running": "active",
      "p-wf-child-done": "finished",
      "p-runner-died": "interrupted",
    });
    expect(scan.notes).toEqual([
      `pi-subagents: ${join(fixture.runsDir, "broken-run", "status.json")} is not valid JSON; skipped.`,
    ]);

    const byId = new Map(scan.runs.map((run) => [run.runId, run]));
    const chain = byId.get("gp-active-chain");
    expect(chain).toMatchObject({
      title: "chain: scout → worker → reviewer",
      progress: "step 1/3",
      state: "running",
      pid: livePid,
      owner: { key: grandparent.file, depth: 2 },
      paths: {
        runDir: fixture.runDir("gp-active-chain"),
        status: join(fixture.runDir("gp-active-chain"), "status.json"),
        outputs: [join(fixture.runDir("gp-active-chain"), "output-0.log")],
      },
    });
    expect(byId.get("gp-undelivered")).toMatchObject({
      state: "complete",
      success: true,
      summary: "Found three call sites of parseArgs.",
      owner: { key: grandparent.file, depth: 2 },
      paths: { result: fixture.resultPath("gp-undelivered") },
    });
    // Consumed by the grandparent's Pi after the fork: what pi-subagents archived of it is reported.
    expect(byId.get("gp-consumed-after-fork")).toMatchObject({
      state: "complete",
      success: true,
      summary: "late",
      paths: {
        outputs: [
          join(fixture.runDir("gp-consumed-after-fork"), "output-0.log"),
          join(fixture.resultsDir, "output-archives", "gp-consumed-after-fork.json"),
          join(fixture.resultsDir, "completion-replay", "gp-consumed-after-fork.json"),
        ],
      },
    });
    expect(byId.get("gp-consumed-after-fork")?.paths.result).toBeUndefined();
    expect(byId.get("p-workflow")).toMatchObject({
      title: "workflow: impl, tests",
      owner: { key: parent.file, depth: 1 },
    });
    expect(byId.get("p-workflow")?.progress).toMatch(
      /^its process \(pid \d+\) is gone; 0\/2 children done, 2 running$/,
    );
    expect(byId.get("p-wf-child-running")).toMatchObject({ parentRunId: "p-workflow", pid: childRunnerPid });
    expect(byId.get("p-wf-child-done")).toMatchObject({
      parentRunId: "p-workflow",
      summary: "tests pass",
      paths: { result: join(fixture.runDir("p-wf-child-done"), "workflow-result.json") },
    });
  });

  it("finds the same runs through the environment's temp root", async () => {
    const scan = await scanSources([piSubagentsSource()], {
      ...context,
      env: { PI_SUBAGENTS_TEMP_ROOT: fixture.root },
    });
    expect(Object.keys(outcomes(scan.runs)).sort()).toEqual(
      [
        "gp-active-chain",
        "gp-consumed-after-fork",
        "gp-undelivered",
        "p-runner-died",
        "p-wf-child-done",
        "p-wf-child-running",
        "p-workflow",
      ].sort(),
    );
  });

  it("leaves out what the ledger already holds, and watches the running ones", async () => {
    const scan = await scanSources([piSubagentsSource()], context);
    const byId = new Map(scan.runs.map((run) => [run.runId, run]));
    const ledger = new Set([
      deliveryKey(byId.get("gp-active-chain") as AdoptedRun),
      deliveryKey(byId.get("p-workflow") as AdoptedRun),
    ]);
    expect(
      selectForResume(scan.runs, ledger)
        .map((run) => run.runId)
        .sort(),
    ).toEqual(
      ["gp-consumed-after-fork", "gp-undelivered", "p-runner-died", "p-wf-child-done", "p-wf-child-running"].sort(),
    );
    expect(
      selectWatched(scan.runs)
        .map((run) => run.runId)
        .sort(),
    ).toEqual(["gp-active-chain", "p-wf-child-running"]);
  });

  it("reports a watched run as finished once the package writes its result, and an ended runner as interrupted", async () => {
    const scan = await scanSources([piSubagentsSource()], context);
    const watched = selectWatched(scan.runs);
    const before = await refreshRuns([piSubagentsSource()], watched, context);
    expect(newlyEnded(before.runs, new Set())).toEqual([]);

    fixture.finishRun("gp-active-chain", { summary: "Reviewed: ship it.", delivery: "removed" });
    await processes.kill(childRunnerPid);
    const after = await refreshRuns([piSubagentsSource()], watched, context);
    expect(outcomes(after.runs)).toEqual({ "gp-active-chain": "finished", "p-wf-child-running": "interrupted" });
    // Adopted runs count as finished even when the owner's Pi consumed the result meanwhile.
    expect(after.runs.find((run) => run.runId === "gp-active-chain")).toMatchObject({
      state: "complete",
      success: true,
      summary: "Reviewed: ship it.",
    });
    const ended = newlyEnded(
      after.runs,
      new Set([deliveryKey({ source: "pi-subagents", runId: "p-wf-child-running", outcome: "interrupted" })]),
    );
    expect(ended.map((run) => run.runId)).toEqual(["gp-active-chain"]);
  });
});

describe("index segments", () => {
  let writers: PiSubagentsWriters;
  beforeAll(async () => {
    writers = await loadPiSubagentsWriters();
  });

  it("match the package's encodeIndexSegment for any string", () => {
    const sessionPaths = fc
      .tuple(
        fc.array(fc.stringMatching(/^[A-Za-z0-9._ -]{1,30}$/), { maxLength: 12 }),
        fc.constantFrom(".jsonl", "", ".x"),
      )
      .map(([parts, suffix]) => `/${parts.join("/")}${suffix}`);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "grapheme", maxLength: 300 }),
          fc.string({ unit: "binary", maxLength: 100 }),
          sessionPaths,
        ),
        (value) => {
          expect(indexSegment(value)).toBe(writers.encodeIndexSegment(value));
          expect(indexSegment(value, 250)).toBe(writers.encodeIndexSegment(value, 250));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("hash session-file keys and offer the plain encoding as an alias", () => {
    const file = "/home/u/.pi/agent/sessions/--repo--/2026-01-01T00-00-00-000Z_abc.jsonl";
    expect(indexSegmentAliases(file)).toEqual([writers.encodeIndexSegment(file), encodeURIComponent(file)]);
    expect(indexSegmentAliases(file)[0]).toMatch(/^~sha256-[0-9a-f]{64}$/);
    expect(indexSegmentAliases("plain-id")).toEqual(["plain-id"]);
  });
});
