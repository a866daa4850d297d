/**
 * One lineage scan across every source, and the decisions made on its result: what goes into the
 * resume message, what is watched for completion, what a later refresh has newly finished.
 *
 * Invariants:
 * - A failing source becomes a note; the other sources' runs are still returned.
 * - Selection is pure: given the same runs and ledger, the same runs are chosen.
 * - Handoff notices are only said together with adopted work: on their own they would repeat
 *   the handoff message the session already holds.
 */
import { handoffChainSource } from "./sources/handoff-chain.ts";
import { piSubagentsSource, type PiSubagentsSourceOptions } from "./sources/pi-subagents.ts";
import { piWorkflowsSource } from "./sources/pi-workflows.ts";
import { isDelivered } from "./ledger.ts";
import type { AdoptedRun, LineageSource, ScanContext, SourceScan } from "./types.ts";
import { errorMessage } from "../errors.ts";

export function defaultSources(options: { piSubagents?: PiSubagentsSourceOptions } = {}): LineageSource[] {
  return [handoffChainSource(), piSubagentsSource(options.piSubagents), piWorkflowsSource()];
}

/** pi-subagents' completion owner id for this process, if pi-subagents runs in it (read, never set). */
export function ownCompletionOwnerId(): string | undefined {
  const value: unknown = (globalThis as Record<symbol, unknown>)[Symbol.for("pi-subagents.completion-owner-id")];
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

export async function scanSources(sources: readonly LineageSource[], context: ScanContext): Promise<SourceScan> {
  const results = await Promise.all(
    sources.map(async (source): Promise<SourceScan> => {
      try {
        return await source.scan(context);
      } catch (error) {
        return { runs: [], notes: [`${source.name}: the scan failed: ${errorMessage(error)}`] };
      }
    }),
  );
  return { runs: results.flatMap((r) => r.runs), notes: results.flatMap((r) => r.notes) };
}

export async function refreshRuns(
  sources: readonly LineageSource[],
  runs: readonly AdoptedRun[],
  context: ScanContext,
): Promise<SourceScan> {
  const results = await Promise.all(
    sources.map(async (source): Promise<SourceScan> => {
      const own = runs.filter((run) => run.source === source.name);
      if (own.length === 0) return { runs: [], notes: [] };
      try {
        return await source.refresh(own, context);
      } catch (error) {
        return { runs: own, notes: [`${source.name}: the refresh failed: ${errorMessage(error)}`] };
      }
    }),
  );
  return { runs: results.flatMap((r) => r.runs), notes: results.flatMap((r) => r.notes) };
}

/** The runs for the resume message: every triple not yet in the ledger (handoffs only alongside work). */
export function selectForResume(runs: readonly AdoptedRun[], ledger: ReadonlySet<string>): AdoptedRun[] {
  const fresh = runs.filter((run) => !isDelivered(ledger, run));
  const work = fresh.filter((run) => run.source !== "handoff");
  if (work.length === 0) return [];
  return [...fresh.filter((run) => run.source === "handoff"), ...work];
}

/** Runs worth watching for a later completion: those still running. */
export function selectWatched(runs: readonly AdoptedRun[]): AdoptedRun[] {
  return runs.filter((run) => run.outcome === "active");
}

/** Watched runs whose refreshed view ended (finished or interrupted), and are not yet in the ledger. */
export function newlyEnded(refreshed: readonly AdoptedRun[], ledger: ReadonlySet<string>): AdoptedRun[] {
  return refreshed.filter(
    (run) => (run.outcome === "finished" || run.outcome === "interrupted") && !isDelivered(ledger, run),
  );
}
