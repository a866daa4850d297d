/**
 * The vocabulary of lineage adoption: what a source adapter reports about one run of background
 * work that an ancestor session started, and the small interface every adapter implements.
 *
 * Invariants:
 * - An `AdoptedRun` is plain, serializable data: it can go into a message's `details` and a tool
 *   result unchanged.
 * - `(source, runId, outcome)` identifies one delivery; the ledger stores exactly that triple.
 * - Adapters never write, rename or delete anything that belongs to another extension.
 */
import type { Lineage } from "./ancestry.ts";

export const LINEAGE_SOURCES = ["pi-subagents", "pi-workflows", "handoff"] as const;
export type LineageSourceName = (typeof LINEAGE_SOURCES)[number];

/**
 * - `active`: still running (live process) or queued.
 * - `interrupted`: said it was running, but the process that ran it is gone, without a result.
 * - `finished`: reached a terminal state; its result was not yet delivered to this lineage.
 * - `notice`: nothing to wait for, only something to say once (a handoff, a bound workflow).
 */
export const RUN_OUTCOMES = ["active", "interrupted", "finished", "notice"] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

export interface RunPaths {
  /** The run's own directory (pi-subagents `async-subagent-runs/<id>`, a pi-workflows bundle). */
  runDir?: string;
  status?: string;
  /** The result payload, while it exists. */
  result?: string;
  /** Output logs and artifacts a reader can open. */
  outputs: string[];
  /** Pi session files of the run's children. */
  sessionFiles: string[];
}

export interface AdoptedRun {
  source: LineageSourceName;
  runId: string;
  outcome: RunOutcome;
  /** The state exactly as the owning extension wrote it (`running`, `complete`, `waiting`, ...). */
  state: string;
  /** One line: kind of run and who runs it, e.g. `chain: scout → planner`. */
  title: string;
  /** One line of progress, e.g. `step 2/3`. */
  progress?: string;
  /** The ancestor that owns the run: the value its owner was recorded under, and how far up it is. */
  owner: { key: string; depth: number };
  /** For a child of a scripted workflow: the workflow's run id. */
  parentRunId?: string;
  pid?: number;
  startedAt?: number;
  endedAt?: number | undefined;
  success?: boolean;
  /** Bounded, sanitized, redacted. */
  summary?: string;
  /** Bounded, sanitized, redacted. */
  error?: string;
  paths: RunPaths;
  /** How a reader (the model or the user) can look at the run: commands, files. */
  inspect: string[];
}

/** What a scan of one source found: the runs, and notes on anything skipped or unreadable. */
export interface SourceScan {
  runs: AdoptedRun[];
  notes: string[];
}

/** The minimal view of a session entry lineage adoption reads (Pi's `SessionEntry` fits it). */
export interface LineageEntryView {
  type: string;
  customType?: string;
  details?: unknown;
  data?: unknown;
}

export interface ScanContext {
  lineage: Lineage;
  /** The current session's active branch (handoff messages live here). */
  branch: readonly LineageEntryView[];
  env: NodeJS.ProcessEnv;
  agentDir: string;
  now: number;
  /**
   * The pi-subagents completion owner id of this very process, if pi-subagents runs in it:
   * runs with this owner are delivered by pi-subagents itself, so adoption leaves them alone.
   */
  ownCompletionOwnerId?: string;
}

export interface LineageSource {
  readonly name: LineageSourceName;
  /** Everything this source holds for the lineage's ancestors. Never throws for bad files. */
  scan(context: ScanContext): Promise<SourceScan>;
  /**
   * The current view of runs adopted earlier (for the completion watch): one run per input run
   * that can still be read; a run adopted once is never dropped as "delivered elsewhere".
   */
  refresh(runs: readonly AdoptedRun[], context: ScanContext): Promise<SourceScan>;
}

export function deliveryKey(run: Pick<AdoptedRun, "source" | "runId" | "outcome">): string {
  return JSON.stringify([run.source, run.runId, run.outcome]);
}
