/**
 * What the background runs a session started cost, as their own records say: pi-subagents writes
 * `totalCost` (input and output tokens, dollars) into a run's `status.json` when it knows it.
 *
 * Invariants:
 * - Read-only toward pi-subagents' files, found through its per-session indexes (terminal markers,
 *   result index) and the global active markers (each one's status says whose run it is), as
 *   lineage adoption finds them (src/adoption/sources/pi-subagents-layout.ts): unrelated runs are
 *   never opened beyond the active ones.
 * - A run is counted once, for the session that started it (its status's `sessionId`: the session
 *   file, or the bare session id); a session that adopted it after a handoff does not count it again.
 * - A run whose record says no cost is listed as such (`cost` absent), never counted as zero.
 * - Never throws: a file that cannot be read is left out.
 */
import { join } from "node:path";
import { z } from "zod";
import { mapLimit } from "../concurrency.ts";
import { listDir, readJsonFile } from "../adoption/read-json.ts";
import {
  activeRunsDir,
  candidateTempRoots,
  isSafeRunId,
  layoutFor,
  ResultIndexEntrySchema,
  RunStatusSchema,
  statusPath,
  TerminalMarkerSchema,
  terminalRunsDirs,
  resultIndexDirs,
  type PiSubagentsDirs,
} from "../adoption/sources/pi-subagents-layout.ts";
import { isDirectory } from "../fs/probe.ts";

const READ_CONCURRENCY = 16;

/** pi-subagents' `CostSummary`. */
const CostSummarySchema = z.looseObject({
  inputTokens: z.number().finite().nonnegative(),
  outputTokens: z.number().finite().nonnegative(),
  costUsd: z.number().finite().nonnegative(),
});
const CostedStatusSchema = RunStatusSchema.extend({ totalCost: CostSummarySchema.optional().catch(undefined) });

export const RunCostSchema = z.strictObject({
  source: z.literal("pi-subagents"),
  runId: z.string(),
  /** The state as pi-subagents wrote it (`running`, `complete`, ...). */
  state: z.string(),
  /** Absent when the run's record says nothing of its cost. */
  cost: z
    .strictObject({
      inputTokens: z.number().nonnegative(),
      outputTokens: z.number().nonnegative(),
      dollars: z.number().nonnegative(),
    })
    .optional(),
});
export type RunCost = z.infer<typeof RunCostSchema>;

/** The runs of many sessions, with the global active markers read once. */
export class RunCostReader {
  readonly #roots: string[];
  #activeByOwner: Promise<Map<string, string[]>> | undefined;
  #existing: Promise<PiSubagentsDirs[]> | undefined;

  /** `roots`: pi-subagents temp roots to read instead of the environment's (tests). */
  constructor(env: NodeJS.ProcessEnv, roots?: readonly string[]) {
    this.#roots = roots === undefined ? candidateTempRoots(env) : [...roots];
  }

  /** The runs started by the session known by any of `keys` (its file, its id). */
  async runsOf(keys: readonly string[]): Promise<RunCost[]> {
    const dirsList = await this.#existingDirs();
    if (dirsList.length === 0) return [];
    const found = new Map<string, PiSubagentsDirs>();
    const active = await this.#active();
    for (const dirs of dirsList) {
      for (const key of keys) {
        for (const dir of terminalRunsDirs(dirs, key))
          for (const marker of await records(dir, TerminalMarkerSchema))
            if (marker.sessionId === key && isSafeRunId(marker.runId)) found.set(marker.runId, dirs);
        for (const dir of resultIndexDirs(dirs, key))
          for (const entry of await records(dir, ResultIndexEntrySchema))
            if (entry.sessionId === key && isSafeRunId(entry.runId)) found.set(entry.runId, dirs);
        for (const runId of active.get(`${dirs.root}\0${key}`) ?? []) found.set(runId, dirs);
      }
    }
    const runs = await mapLimit([...found.entries()], READ_CONCURRENCY, async ([runId, dirs]) => {
      const status = await readJsonFile(statusPath(dirs, runId), CostedStatusSchema);
      if (!status.ok || (status.value.sessionId !== undefined && !keys.includes(status.value.sessionId)))
        return undefined;
      const cost = status.value.totalCost;
      const run: RunCost = {
        source: "pi-subagents",
        runId,
        state: status.value.state,
        ...(cost === undefined
          ? {}
          : { cost: { inputTokens: cost.inputTokens, outputTokens: cost.outputTokens, dollars: cost.costUsd } }),
      };
      return run;
    });
    return runs.filter((run): run is RunCost => run !== undefined).sort((a, b) => a.runId.localeCompare(b.runId));
  }

  #existingDirs(): Promise<PiSubagentsDirs[]> {
    this.#existing ??= (async () => {
      const roots = await Promise.all(this.#roots.map(async (root) => ((await isDirectory(root)) ? [root] : [])));
      return roots.flat().map(layoutFor);
    })();
    return this.#existing;
  }

  /** Running runs by `<root>\0<owner key>`: the active markers are global, each status names its owner. */
  #active(): Promise<Map<string, string[]>> {
    this.#activeByOwner ??= (async () => {
      const byOwner = new Map<string, string[]>();
      for (const dirs of await this.#existingDirs()) {
        const ids = (await listDir(activeRunsDir(dirs), "files")).filter(isSafeRunId);
        const statuses = await mapLimit(ids, READ_CONCURRENCY, (runId) =>
          readJsonFile(statusPath(dirs, runId), RunStatusSchema),
        );
        statuses.forEach((status, index) => {
          const runId = ids[index];
          if (!status.ok || status.value.sessionId === undefined || runId === undefined) return;
          const key = `${dirs.root}\0${status.value.sessionId}`;
          byOwner.set(key, [...(byOwner.get(key) ?? []), runId]);
        });
      }
      return byOwner;
    })();
    return this.#activeByOwner;
  }
}

async function records<S extends z.ZodType>(dir: string, schema: S): Promise<z.infer<S>[]> {
  const names = (await listDir(dir, "files")).filter((name) => name.endsWith(".json") && !name.startsWith("."));
  const reads = await mapLimit(names, READ_CONCURRENCY, (name) => readJsonFile(join(dir, name), schema));
  return reads.flatMap((read) => (read.ok ? [read.value] : []));
}
