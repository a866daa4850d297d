/**
 * Lineage source for pi-subagents background runs (async single/chain/parallel runs and scripted
 * workflows), read from the files the package writes under its temp root.
 *
 * Invariants:
 * - Strictly read-only toward pi-subagents' files: no marker, index, status or result is ever
 *   written, moved or deleted here (pi-subagents' own readers do delete stale markers; we do not).
 * - Cost is bounded by the lineage, not by the store: runs are found through the per-session
 *   terminal and result indexes of the ancestors' keys (direct directory names), plus the active
 *   markers, whose count is the number of runs running right now. Unrelated finished runs are never
 *   opened, however many there are; an ancestor's runs that ended before the fork are opened only
 *   while their result is still waiting.
 * - Liveness is judged by pid, never by `lastUpdate`.
 * - A run that this process's own pi-subagents owns (same completion owner id) is left to it.
 * - Every file is decoded with a zod schema; a malformed file is skipped with a note.
 */
import { dirname, isAbsolute, join } from "node:path";
import type { z } from "zod";
import { ownerIndex, type Ancestor } from "../ancestry.ts";
import { pidLiveness, type PidLiveness } from "../liveness.ts";
import { mapLimit } from "../../concurrency.ts";
import { listDir, readJsonFile } from "../read-json.ts";
import { cleanLine, cleanText } from "../text.ts";
import type { AdoptedRun, LineageSource, RunOutcome, ScanContext, SourceScan } from "../types.ts";
import {
  ACTIVE_STATES,
  activeRunsDir,
  candidateTempRoots,
  completionArchivePath,
  CompletionArchiveSchema,
  isSafeRunId,
  layoutFor,
  pendingResultPaths,
  publicResultPath,
  resultIndexDirs,
  ResultIndexEntrySchema,
  resultPendingDirs,
  ResultPayloadSchema,
  runDir,
  RunStatusSchema,
  statusPath,
  TerminalMarkerSchema,
  terminalRunsDirs,
  workflowChildResultPath,
  completionReplayPath,
  type PiSubagentsDirs,
  type ResultPayload,
  type RunStatus,
} from "./pi-subagents-layout.ts";
import { isDirectory, isFile } from "../../fs/probe.ts";

export const PI_SUBAGENTS_SOURCE = "pi-subagents";
const MAX_SUMMARY_CHARS = 600;
const MAX_ERROR_CHARS = 300;
/** Files read at once: enough to overlap I/O, few enough to leave descriptors for Pi. */
const READ_CONCURRENCY = 16;
/** Safety valve: an ancestor with more indexed runs than this is reported, not read in full. */
const MAX_RUNS_PER_ROOT = 2_000;

export interface PiSubagentsSourceOptions {
  /** Temp roots to read instead of the ones derived from the environment (tests, benchmarks). */
  roots?: string[];
  liveness?: (pid: number | undefined, startedAt: number | undefined) => PidLiveness | Promise<PidLiveness>;
}

interface LocatedResult {
  path: string;
  payload: ResultPayload;
}

/** Why a candidate is not adopted (kept for notes and tests). */
export type SkipReason =
  | "other-session"
  | "delivered-before-fork"
  | "own-process"
  | "dismissed"
  | "unreadable"
  | "gone";

type Evaluation =
  | { kind: "run"; run: AdoptedRun; status?: RunStatus | undefined; notes: string[] }
  | { kind: "skip"; reason: SkipReason; note?: string | undefined };

interface Candidate {
  runId: string;
  /** Status already read while looking at active markers. */
  status?: RunStatus | undefined;
}

/**
 * The `*.json` records in `dir` (dot-files and names `keep` refuses skipped) that match `schema`.
 * One that cannot be read or does not match is left out, with a note when `notes` is given; one
 * that vanished meanwhile is no news.
 */
async function readRecords<S extends z.ZodType>(
  dir: string,
  schema: S,
  notes: string[] | undefined,
  keep: (name: string) => boolean = () => true,
): Promise<z.infer<S>[]> {
  const files = (await listDir(dir, "files")).filter(
    (name) => name.endsWith(".json") && !name.startsWith(".") && keep(name),
  );
  const records: z.infer<S>[] = [];
  for (const read of await mapLimit(files, READ_CONCURRENCY, (name) => readJsonFile(join(dir, name), schema))) {
    if (read.ok) records.push(read.value);
    else if (notes !== undefined && read.code !== "missing") notes.push(`pi-subagents: ${read.message}`);
  }
  return records;
}

/**
 * The source, as a factory whose small inner functions share its options (roots, liveness):
 * long only because it holds them, each step is a function of its own.
 */
export function piSubagentsSource(options: PiSubagentsSourceOptions = {}): LineageSource {
  const liveness = options.liveness ?? pidLiveness;

  async function existingRoots(context: ScanContext): Promise<PiSubagentsDirs[]> {
    const roots = options.roots ?? candidateTempRoots(context.env);
    const found: PiSubagentsDirs[] = [];
    for (const root of roots) {
      const dirs = layoutFor(root);
      if ((await isDirectory(dirs.runs)) || (await isDirectory(dirs.results))) found.push(dirs);
    }
    return found;
  }

  async function scan(context: ScanContext): Promise<SourceScan> {
    const owners = ownerIndex(context.lineage);
    if (owners.size === 0) return { runs: [], notes: [] };
    const notes: string[] = [];
    const runs: AdoptedRun[] = [];
    for (const dirs of await existingRoots(context)) {
      const candidates = await findCandidates(dirs, owners, notes);
      if (candidates.size > MAX_RUNS_PER_ROOT) {
        notes.push(
          `pi-subagents: ${candidates.size} runs belong to this lineage in ${dirs.root}; only ${MAX_RUNS_PER_ROOT} were read.`,
        );
      }
      const list = [...candidates.values()].slice(-MAX_RUNS_PER_ROOT);
      const evaluated = await mapLimit(list, READ_CONCURRENCY, (candidate) =>
        evaluateRun(dirs, candidate.runId, context, owners, { adopted: false, status: candidate.status }),
      );
      runs.push(...(await groupWorkflows(dirs, evaluated, context, owners, notes)));
    }
    return { runs, notes };
  }

  async function findCandidates(
    dirs: PiSubagentsDirs,
    owners: Map<string, Ancestor>,
    notes: string[],
  ): Promise<Map<string, Candidate>> {
    const candidates = new Map<string, Candidate>();
    const add = (runId: string, status?: RunStatus | undefined): void => {
      if (!isSafeRunId(runId)) return;
      const known = candidates.get(runId);
      if (known === undefined || (known.status === undefined && status !== undefined))
        candidates.set(runId, { runId, status });
    };
    for (const [key, owner] of owners) {
      // Finished runs: one marker per run in the owner's own terminal-index directory, named
      // `<16-digit endedAt>-<seg(runId)>.json`. A run that ended before this branch was forked off
      // the owner is either delivered (already in the copied history) or still has its result
      // waiting, which the result index below finds: its marker need not be opened.
      const endedAfterFork = (name: string): boolean => {
        const endedAt = Number(name.slice(0, 16));
        return owner.forkedAt === undefined || !/^\d{16}-/.test(name) || endedAt > owner.forkedAt;
      };
      for (const dir of terminalRunsDirs(dirs, key)) {
        for (const marker of await readRecords(dir, TerminalMarkerSchema, notes, endedAfterFork))
          if (marker.sessionId === key) add(marker.runId);
      }
      // Results not yet delivered (or delivered but not yet removed), by owner session.
      for (const dir of resultIndexDirs(dirs, key)) {
        for (const entry of await readRecords(dir, ResultIndexEntrySchema, notes))
          if (entry.sessionId === key) add(entry.runId);
      }
      for (const dir of resultPendingDirs(dirs, key)) {
        for (const payload of await readRecords(dir, ResultPayloadSchema, undefined)) {
          const runId = payload.runId ?? payload.id;
          if (runId !== undefined && payload.sessionId === key) add(runId);
        }
      }
    }
    // Running runs: the active markers are global, so each one's status says whose it is.
    const active = (await listDir(activeRunsDir(dirs), "files")).filter(isSafeRunId);
    const statuses = await mapLimit(active, READ_CONCURRENCY, (runId) =>
      readJsonFile(statusPath(dirs, runId), RunStatusSchema),
    );
    statuses.forEach((status, index) => {
      if (status.ok) {
        if (status.value.sessionId !== undefined && owners.has(status.value.sessionId))
          add(active[index] ?? "", status.value);
      } else if (status.code !== "missing") notes.push(`pi-subagents: ${status.message}`);
    });
    return candidates;
  }

  async function locateResult(
    dirs: PiSubagentsDirs,
    runId: string,
    ownerKey: string | undefined,
    status: RunStatus | undefined,
  ): Promise<{ result?: LocatedResult; notes: string[] }> {
    const notes: string[] = [];
    const paths = [
      publicResultPath(dirs, runId),
      ...(ownerKey === undefined ? [] : pendingResultPaths(dirs, ownerKey, runId)),
      ...(status?.parentWorkflowRunId !== undefined ? [workflowChildResultPath(dirs, runId)] : []),
    ];
    for (const path of paths) {
      const read = await readJsonFile(path, ResultPayloadSchema);
      if (!read.ok) {
        if (read.code !== "missing") notes.push(`pi-subagents: ${read.message}`);
        continue;
      }
      const payloadRun = read.value.runId ?? read.value.id;
      if (payloadRun !== undefined && payloadRun !== runId) continue;
      if (ownerKey !== undefined && read.value.sessionId !== undefined && read.value.sessionId !== ownerKey) continue;
      return { result: { path, payload: read.value }, notes };
    }
    return { notes };
  }

  async function evaluateRun(
    dirs: PiSubagentsDirs,
    runId: string,
    context: ScanContext,
    owners: Map<string, Ancestor>,
    options: { adopted: boolean; status?: RunStatus | undefined; previous?: AdoptedRun },
  ): Promise<Evaluation> {
    let status = options.status;
    if (status === undefined) {
      const read = await readJsonFile(statusPath(dirs, runId), RunStatusSchema);
      if (read.ok) status = read.value;
      else if (read.code !== "missing")
        return { kind: "skip", reason: "unreadable", note: `pi-subagents: ${read.message}` };
    }
    const located = await locateResult(dirs, runId, status?.sessionId, status);
    const result = located.result;
    if (status === undefined && result === undefined) return { kind: "skip", reason: "gone", note: located.notes[0] };
    const ownerKey = status?.sessionId ?? result?.payload.sessionId ?? options.previous?.owner.key;
    const owner = ownerKey === undefined ? undefined : owners.get(ownerKey);
    if (owner === undefined && !options.adopted) return { kind: "skip", reason: "other-session" };
    if (status?.completionOwnerId !== undefined && status.completionOwnerId === context.ownCompletionOwnerId) {
      return { kind: "skip", reason: "own-process" };
    }
    if (status?.displayDismissedAt !== undefined && !options.adopted) return { kind: "skip", reason: "dismissed" };

    const delivered = result?.payload.notificationDeliveredAt !== undefined;
    // A result is newer than a status the runner had no time to update.
    const resultState =
      result === undefined
        ? undefined
        : (result.payload.state ?? (result.payload.success === true ? "complete" : "failed"));
    const state =
      (result !== undefined && !delivered ? resultState : undefined) ?? status?.state ?? resultState ?? "unknown";
    let outcome: RunOutcome;
    let pidState: PidLiveness | undefined;
    if (result !== undefined && !delivered) {
      outcome = "finished";
    } else if (status !== undefined && ACTIVE_STATES.has(status.state)) {
      pidState = await liveness(status.pid, status.startedAt);
      outcome = pidState === "dead" ? "interrupted" : "active";
    } else {
      // Terminal, and its result was consumed by the owner (or never written).
      const endedAt = status?.endedAt ?? status?.lastUpdate ?? status?.startedAt ?? result?.payload.timestamp;
      if (!options.adopted) {
        const forkedAt = owner?.forkedAt;
        // Ended before this branch of the lineage was forked off the owner: the owner's copied
        // history already holds the delivery. Unknown times count as delivered (never twice).
        if (forkedAt === undefined || endedAt === undefined || endedAt <= forkedAt)
          return { kind: "skip", reason: "delivered-before-fork" };
      }
      outcome = "finished";
    }
    const run = await describeRun(dirs, runId, {
      status,
      result: delivered ? undefined : result,
      outcome,
      state,
      pidState,
      owner:
        owner === undefined
          ? (options.previous?.owner ?? { key: ownerKey ?? "?", depth: 0 })
          : { key: ownerKey ?? owner.ref, depth: owner.depth },
    });
    return { kind: "run", run, status, notes: located.notes };
  }

  /**
   * Children of a scripted workflow are part of it: while the workflow lives (or has finished) its
   * own result covers them. When the workflow's process is gone, nobody collects them, so they
   * are listed under it and watched on their own.
   */
  async function groupWorkflows(
    dirs: PiSubagentsDirs,
    evaluated: Evaluation[],
    context: ScanContext,
    owners: Map<string, Ancestor>,
    notes: string[],
  ): Promise<AdoptedRun[]> {
    const byId = new Map<string, { run: AdoptedRun; status?: RunStatus | undefined }>();
    for (const evaluation of evaluated) {
      if (evaluation.kind === "run") {
        byId.set(evaluation.run.runId, { run: evaluation.run, status: evaluation.status });
        notes.push(...evaluation.notes);
      } else if (evaluation.note !== undefined) notes.push(evaluation.note);
    }
    // An interrupted workflow's children that the indexes did not list (their status names them).
    for (const { run, status } of [...byId.values()]) {
      if (run.outcome !== "interrupted" || status?.mode !== "workflow") continue;
      const childIds = (status.steps ?? [])
        .map((step) => step.runId)
        .filter((id): id is string => id !== undefined && isSafeRunId(id) && !byId.has(id));
      const children = await mapLimit(childIds, READ_CONCURRENCY, (childId) =>
        evaluateRun(dirs, childId, context, owners, { adopted: false }),
      );
      for (const child of children) {
        if (child.kind === "run" && child.status?.parentWorkflowRunId === run.runId)
          byId.set(child.run.runId, { run: child.run, status: child.status });
      }
    }
    const kept: AdoptedRun[] = [];
    for (const { run } of byId.values()) {
      const parent = run.parentRunId === undefined ? undefined : byId.get(run.parentRunId);
      if (parent !== undefined && parent.run.outcome !== "interrupted") continue;
      kept.push(run);
    }
    return kept;
  }

  async function refresh(runs: readonly AdoptedRun[], context: ScanContext): Promise<SourceScan> {
    const owners = ownerIndex(context.lineage);
    const notes: string[] = [];
    const refreshed = await mapLimit(
      runs.filter((run) => run.source === PI_SUBAGENTS_SOURCE),
      READ_CONCURRENCY,
      async (previous): Promise<AdoptedRun> => {
        const dirs =
          previous.paths.runDir === undefined ? undefined : layoutFor(dirname(dirname(previous.paths.runDir)));
        if (dirs === undefined) return previous;
        const evaluation = await evaluateRun(dirs, previous.runId, context, owners, { adopted: true, previous });
        if (evaluation.kind === "run") return evaluation.run;
        if (evaluation.note !== undefined) notes.push(evaluation.note);
        // The run's files are gone (retention) or unreadable: keep what was known.
        return previous;
      },
    );
    return { runs: refreshed, notes };
  }

  return { name: PI_SUBAGENTS_SOURCE, scan, refresh };
}

function agentsOf(status: RunStatus | undefined, result: ResultPayload | undefined): string[] {
  const names = [
    ...(status?.steps ?? []).map((step) => step.agent ?? undefined),
    ...(result?.results ?? []).map((child) => child.agent ?? undefined),
    result?.agent ?? undefined,
  ].filter((name): name is string => typeof name === "string" && name.length > 0);
  return [...new Set(names)];
}

function titleOf(mode: string, agents: string[], status: RunStatus | undefined): string {
  const shown = agents.slice(0, 5).map((name) => cleanLine(name, 40));
  const more = agents.length > shown.length ? ` +${agents.length - shown.length}` : "";
  switch (mode) {
    case "chain":
      return `chain: ${shown.join(" → ")}${more}`;
    case "parallel":
      return `parallel: ${shown.join(", ")}${more}`;
    case "workflow":
      return `workflow${status?.workflowKey === undefined ? "" : ` ${cleanLine(status.workflowKey, 60)}`}${shown.length > 0 ? `: ${shown.join(", ")}${more}` : ""}`;
    default:
      return `${cleanLine(mode, 20)}${shown.length > 0 ? `: ${shown.join(", ")}${more}` : ""}`;
  }
}

const DONE_STEP_STATES: ReadonlySet<string> = new Set([
  "complete",
  "completed",
  "failed",
  "partial",
  "paused",
  "stopped",
  "rejected",
]);

function progressOf(status: RunStatus | undefined): string | undefined {
  if (status === undefined) return undefined;
  const steps = status.steps ?? [];
  if (status.mode === "chain") {
    const total = status.chainStepCount ?? steps.length;
    if (total > 0 && status.currentStep !== undefined)
      return `step ${Math.min(status.currentStep + 1, total)}/${total}`;
  }
  if (steps.length === 0) return undefined;
  const done = steps.filter((step) => step.status !== undefined && DONE_STEP_STATES.has(step.status)).length;
  const running = steps.filter((step) => step.status === "running").length;
  const label = status.mode === "workflow" ? "children" : "steps";
  return `${done}/${steps.length} ${label} done${running > 0 ? `, ${running} running` : ""}`;
}

function absoluteIn(dir: string, path: string): string {
  return isAbsolute(path) ? path : join(dir, path);
}

/**
 * The files a run left (outputs, child sessions) and, for a finished run whose result its owner
 * already consumed, the text pi-subagents archived for it.
 */
async function runFiles(
  dirs: PiSubagentsDirs,
  runId: string,
  input: { status?: RunStatus | undefined; result?: LocatedResult | undefined; outcome: RunOutcome },
): Promise<{ outputs: Set<string>; sessionFiles: Set<string>; archivedText: string | undefined }> {
  const { status, outcome } = input;
  const payload = input.result?.payload;
  const outputs = new Set<string>();
  const sessionFiles = new Set<string>();
  if (status?.outputFile !== undefined) outputs.add(absoluteIn(runDir(dirs, runId), status.outputFile));
  for (const child of payload?.results ?? []) {
    if (child.artifactPaths?.outputPath) outputs.add(child.artifactPaths.outputPath);
    if (child.savedOutputPath) outputs.add(child.savedOutputPath);
    if (child.sessionFile) sessionFiles.add(child.sessionFile);
  }
  for (const step of status?.steps ?? []) if (step.sessionFile) sessionFiles.add(step.sessionFile);
  if (status?.sessionFile) sessionFiles.add(status.sessionFile);
  let archivedText: string | undefined;
  if (payload === undefined && outcome === "finished") {
    // The owner consumed the result: pi-subagents keeps a bounded replay and an output archive.
    for (const path of [completionArchivePath(dirs, runId), completionReplayPath(dirs, runId)])
      if (await isFile(path)) outputs.add(path);
    const archive = await readJsonFile(completionArchivePath(dirs, runId), CompletionArchiveSchema);
    if (archive.ok) {
      for (const entry of archive.value.entries) if (entry.path !== undefined) outputs.add(entry.path);
      archivedText = archive.value.entries
        .map((entry) => entry.text)
        .find((text) => text !== undefined && text.trim().length > 0);
    }
  }
  return { outputs, sessionFiles, archivedText };
}

/** The children's outputs of a result, as one text (empty when none has any). */
function childOutputs(payload: ResultPayload | undefined): string {
  return (payload?.results ?? [])
    .map((child) => child.output)
    .filter((output): output is string => typeof output === "string" && output.trim().length > 0)
    .join("\n\n");
}

/** How to look at a run: pi-subagents' own status call, then the files that show it. */
function inspectSteps(
  runId: string,
  resultFile: string | undefined,
  statusFile: string | undefined,
  firstOutput: string | undefined,
): string[] {
  const inspect = [`subagent({ action: "status", id: "${runId}" }) (with pi-subagents loaded)`];
  if (resultFile !== undefined) inspect.push(`read ${resultFile}`);
  if (statusFile !== undefined) inspect.push(`read ${statusFile}`);
  if (firstOutput !== undefined) inspect.push(`read ${firstOutput}`);
  return inspect;
}

async function describeRun(
  dirs: PiSubagentsDirs,
  runId: string,
  input: {
    status?: RunStatus | undefined;
    result?: LocatedResult | undefined;
    outcome: RunOutcome;
    state: string;
    pidState?: PidLiveness | undefined;
    owner: AdoptedRun["owner"];
  },
): Promise<AdoptedRun> {
  const { status, result, outcome } = input;
  const payload = result?.payload;
  const mode = status?.mode ?? payload?.mode ?? "run";
  const dir = runDir(dirs, runId);
  const { outputs, sessionFiles, archivedText } = await runFiles(dirs, runId, input);

  const summaryText = archivedText ?? payload?.summary ?? childOutputs(payload);
  const errorText =
    payload?.error ??
    status?.error ??
    (payload?.results ?? []).map((child) => child.error).find((e) => typeof e === "string");
  const statusFile = status === undefined ? undefined : statusPath(dirs, runId);
  const inspect = inspectSteps(runId, result?.path, statusFile, [...outputs][0]);

  let progress = progressOf(status);
  if (outcome === "interrupted") {
    const why = status?.pid === undefined ? "its process is gone" : `its process (pid ${status.pid}) is gone`;
    progress = progress === undefined ? why : `${why}; ${progress}`;
  }
  return {
    source: PI_SUBAGENTS_SOURCE,
    runId,
    outcome,
    state: input.state,
    title: titleOf(mode, agentsOf(status, payload), status),
    ...(progress === undefined ? {} : { progress }),
    owner: input.owner,
    ...(status?.parentWorkflowRunId === undefined ? {} : { parentRunId: status.parentWorkflowRunId }),
    ...(status?.pid === undefined ? {} : { pid: status.pid }),
    ...(status?.startedAt === undefined ? {} : { startedAt: status.startedAt }),
    ...((status?.endedAt ?? payload?.timestamp) === undefined
      ? {}
      : { endedAt: status?.endedAt ?? payload?.timestamp }),
    ...(payload?.success === undefined
      ? status !== undefined && outcome === "finished"
        ? { success: status.state === "complete" }
        : {}
      : { success: payload.success }),
    ...(summaryText ? { summary: cleanText(summaryText, MAX_SUMMARY_CHARS) } : {}),
    ...(errorText ? { error: cleanText(errorText, MAX_ERROR_CHARS) } : {}),
    paths: {
      runDir: dir,
      ...(statusFile === undefined ? {} : { status: statusFile }),
      ...(result === undefined ? {} : { result: result.path }),
      outputs: [...outputs],
      sessionFiles: [...sessionFiles],
    },
    inspect,
  };
}
