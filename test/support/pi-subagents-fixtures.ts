/**
 * pi-subagents run trees written by the real package's own writer code (node_modules/pi-subagents,
 * pinned 0.67.0): status files through its atomic JSON writer, active and terminal markers
 * through its active-run index, results through its result-file writer, and a delivery the way
 * its result watcher records one (completion replay and output archive, `notificationDeliveredAt`,
 * then removal of the file and its index).
 *
 * Invariants:
 * - Everything is written under the given temp root; nothing touches /tmp/pi-subagents-uid-*.
 * - The package version is checked before use, so an upgrade fails loudly instead of silently
 *   testing against a different layout.
 * - The writer modules are loaded by path at run time (`importModule`): vitest transforms them,
 *   plain Node (the benchmark) loads them through bin/native-loader.mjs. Their types are declared
 *   here, narrowly.
 */
import { readFileSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const PI_SUBAGENTS_VERSION = "0.67.0";
const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "node_modules", "pi-subagents");

type RunState = "queued" | "running" | "complete" | "failed" | "partial" | "paused" | "stopped" | "rejected";

export interface PiSubagentsWriters {
  writeAtomicJson(filePath: string, payload: object): void;
  updateActiveRunIndex(asyncDir: string, state: RunState, toolCallId?: string): void;
  writeAsyncResultFile(resultPath: string, data: Record<string, unknown>): { state: "public" | "pending" };
  removeResultIndex(resultsDir: string, sessionId: string | undefined, runId: string | undefined): void;
  encodeIndexSegment(value: string, maxBytes?: number): string;
  toWaitCompletion(data: Record<string, unknown>, runId: string): unknown;
  writeCompletionReplay(input: {
    resultsDir: string;
    runId: string;
    sessionId: string;
    completion: unknown;
    data: Record<string, unknown>;
    now: number;
    ttlMs: number;
  }): unknown;
}

export type ModuleImporter = (path: string) => Promise<unknown>;

const defaultImporter: ModuleImporter = (path) => import(/* @vite-ignore */ pathToFileURL(path).href);

function pick<T>(module: unknown, name: string): T {
  const value = (module as Record<string, unknown>)[name];
  if (typeof value !== "function")
    throw new Error(`pi-subagents no longer exports ${name}; the fixtures need updating.`);
  return value as T;
}

export async function loadPiSubagentsWriters(
  importModule: ModuleImporter = defaultImporter,
): Promise<PiSubagentsWriters> {
  const version = (JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version?: string })
    .version;
  if (version !== PI_SUBAGENTS_VERSION)
    throw new Error(`The fixtures are written for pi-subagents ${PI_SUBAGENTS_VERSION}, found ${version}.`);
  const src = (path: string) => join(PACKAGE_ROOT, "src", path);
  const atomic = await importModule(src("shared/atomic-json.ts"));
  const activeIndex = await importModule(src("runs/background/active-run-index.ts"));
  const resultFiles = await importModule(src("runs/background/result-files.ts"));
  const segments = await importModule(src("runs/background/index-segment.ts"));
  const waitCompletions = await importModule(src("runs/background/wait-completions.ts"));
  const replay = await importModule(src("runs/background/completion-replay.ts"));
  return {
    writeAtomicJson: pick(atomic, "writeAtomicJson"),
    updateActiveRunIndex: pick(activeIndex, "updateActiveRunIndex"),
    writeAsyncResultFile: pick(resultFiles, "writeAsyncResultFile"),
    removeResultIndex: pick(resultFiles, "removeResultIndex"),
    encodeIndexSegment: pick(segments, "encodeIndexSegment"),
    toWaitCompletion: pick(waitCompletions, "toWaitCompletion"),
    writeCompletionReplay: pick(replay, "writeCompletionReplay"),
  };
}

export interface StartRunInput {
  runId: string;
  /** The owner: a session file path (or a bare id for an unsaved session). */
  sessionId: string;
  mode?: "single" | "chain" | "parallel" | "workflow";
  agents?: string[];
  pid?: number;
  startedAt?: number;
  state?: "queued" | "running";
  completionOwnerId?: string;
  parentWorkflowRunId?: string;
  /** Child run ids of a workflow (its `steps[].runId`). */
  childRunIds?: string[];
  cwd?: string;
}

export interface FinishRunInput {
  state?: Exclude<RunState, "queued" | "running">;
  summary?: string;
  endedAt?: number;
  /** Awaited workflow children write `<runDir>/workflow-result.json` instead of the public result. */
  resultLocation?: "public" | "workflow-child";
  /** What the owner's pi-subagents did with the result: nothing yet, marked it, or marked and removed it. */
  delivery?: "none" | "marked" | "removed";
  /** Skip writing a result file (a runner that died after its terminal status). */
  noResult?: boolean;
}

/** One pi-subagents temp root, filled through the package's writers. */
export class PiSubagentsFixture {
  readonly root: string;
  readonly runsDir: string;
  readonly resultsDir: string;
  private readonly writers: PiSubagentsWriters;
  private readonly statuses = new Map<string, Record<string, unknown>>();

  constructor(root: string, writers: PiSubagentsWriters) {
    this.root = root;
    this.runsDir = join(root, "async-subagent-runs");
    this.resultsDir = join(root, "async-subagent-results");
    this.writers = writers;
  }

  runDir(runId: string): string {
    return join(this.runsDir, runId);
  }

  resultPath(runId: string): string {
    return join(this.resultsDir, `${runId}.json`);
  }

  /** A queued/running run: status.json plus its active marker, as the runner writes them. */
  startRun(input: StartRunInput): void {
    const asyncDir = this.runDir(input.runId);
    const agents = input.agents ?? ["worker"];
    const mode = input.mode ?? (agents.length > 1 ? "chain" : "single");
    const startedAt = input.startedAt ?? Date.now();
    const status: Record<string, unknown> = {
      runId: input.runId,
      sessionId: input.sessionId,
      completionOwnerId: input.completionOwnerId ?? "owner-of-another-process",
      mode,
      state: input.state ?? "running",
      startedAt,
      lastUpdate: startedAt,
      pid: input.pid,
      cwd: input.cwd ?? "/tmp",
      currentStep: 0,
      ...(mode === "chain" ? { chainStepCount: agents.length } : {}),
      ...(input.parentWorkflowRunId === undefined
        ? {}
        : { parentWorkflowRunId: input.parentWorkflowRunId, workflowKey: `${input.runId}-key` }),
      steps:
        mode === "workflow"
          ? (input.childRunIds ?? []).map((runId, i) => ({
              agent: agents[i] ?? "worker",
              status: "running",
              runId,
              async: true,
              workflowKey: `k${i}`,
            }))
          : agents.map((agent, i) => ({ agent, status: i === 0 ? "running" : "pending" })),
      outputFile: join(asyncDir, "output-0.log"),
    };
    this.writers.writeAtomicJson(join(asyncDir, "status.json"), status);
    this.writers.updateActiveRunIndex(asyncDir, status.state as RunState);
    this.statuses.set(input.runId, status);
  }

  /** Terminal status (which moves the marker to the owner's terminal index), then the result. */
  finishRun(runId: string, input: FinishRunInput = {}): void {
    const asyncDir = this.runDir(runId);
    const previous = this.statuses.get(runId);
    if (previous === undefined) throw new Error(`finishRun: ${runId} was not started by this fixture.`);
    const state = input.state ?? "complete";
    const endedAt = input.endedAt ?? Date.now();
    const status = {
      ...previous,
      state,
      endedAt,
      lastUpdate: endedAt,
      steps: (previous.steps as Array<Record<string, unknown>>).map((step) => ({
        ...step,
        status: state === "complete" ? "complete" : "failed",
      })),
      ...(state === "complete" ? {} : { error: input.summary ?? "failed" }),
    };
    this.writers.writeAtomicJson(join(asyncDir, "status.json"), status);
    this.writers.updateActiveRunIndex(asyncDir, state);
    this.statuses.set(runId, status);
    if (input.noResult === true) return;
    const sessionId = String(previous.sessionId);
    const resultPath =
      input.resultLocation === "workflow-child" ? join(asyncDir, "workflow-result.json") : this.resultPath(runId);
    const agents = (previous.steps as Array<{ agent: string }>).map((step) => step.agent);
    const payload: Record<string, unknown> = {
      id: runId,
      agent: agents[0] ?? "worker",
      mode: previous.mode,
      success: state === "complete",
      state,
      summary: input.summary ?? `${runId} done`,
      results: agents.map((agent) => ({
        agent,
        output: input.summary ?? `${runId} done`,
        success: state === "complete",
      })),
      timestamp: endedAt,
      durationMs: endedAt - Number(previous.startedAt),
      sessionId,
      completionOwnerId: previous.completionOwnerId,
      asyncDir,
      cwd: previous.cwd,
    };
    this.writers.writeAsyncResultFile(resultPath, payload);
    const delivery = input.delivery ?? "none";
    if (delivery === "none") return;
    // As pi-subagents' result watcher does once its owner accepted the notification: keep a
    // bounded replay (and output archive), mark the result delivered, then remove it.
    if (input.resultLocation !== "workflow-child") {
      this.writers.writeCompletionReplay({
        resultsDir: this.resultsDir,
        runId,
        sessionId,
        completion: this.writers.toWaitCompletion(payload, runId),
        data: payload,
        now: endedAt + 5,
        ttlMs: 30 * 60 * 1000,
      });
    }
    this.writers.writeAsyncResultFile(resultPath, { ...payload, runId, notificationDeliveredAt: endedAt + 10 });
    if (delivery === "removed") {
      unlinkSync(resultPath);
      this.writers.removeResultIndex(dirname(resultPath), sessionId, runId);
    }
  }
}
