/**
 * The `adopted_runs` tool's answers: the runs a session adopted from its ancestors, listed or
 * one inspected in full with the end of its output log. The Pi adapter registers the tool and
 * hands over the session's state; every word and choice is made here.
 *
 * Invariants:
 * - Read-only: at most one bounded read, the tail of the inspected run's first output log.
 * - Text from other extensions' files is cleaned (control characters, secrets, length) before it
 *   reaches the model.
 * - A run id may be given by a unique prefix of at least 4 characters; an ambiguous or unknown one
 *   is an error that says how to find the right one.
 */
import { readFileEnd } from "../fs/probe.ts";
import { ADOPTED_RUNS_TOOL } from "./messages.ts";
import { cleanText, formatTime } from "./text.ts";
import { deliveryKey, type AdoptedRun } from "./types.ts";

const OUTPUT_TAIL_CHARS = 4_000;
const MIN_PREFIX = 4;
const NOTES_SHOWN = 20;
const OUTCOME_ORDER: readonly string[] = ["active", "interrupted", "finished", "notice"];

export interface AdoptedRunsRequest {
  action: string;
  runId?: string;
}

/** Where the session's lineage stands when the tool is called. */
export type AdoptedRunsState =
  | { code: "without_lineage" }
  | { code: "not_scanned" }
  | { code: "scanned"; runs: readonly AdoptedRun[]; notes: readonly string[] };

export interface AdoptedRunsAnswer {
  text: string;
  /** The delivery keys of the runs the answer names. */
  runs: string[];
  isError?: true;
}

export async function answerAdoptedRuns(
  request: AdoptedRunsRequest,
  state: AdoptedRunsState,
): Promise<AdoptedRunsAnswer> {
  if (state.code === "without_lineage") {
    return {
      text: "This session continues no earlier session (its header names no parent), so it has adopted nothing.",
      runs: [],
    };
  }
  if (state.code === "not_scanned")
    return { text: "The lineage scan has not finished yet; try again in a moment.", runs: [] };
  return request.action === "inspect" ? inspectRun(state.runs, request.runId ?? "") : listRuns(state.runs, state.notes);
}

async function inspectRun(runs: readonly AdoptedRun[], wanted: string): Promise<AdoptedRunsAnswer> {
  const matches = runs.filter(
    (run) => run.runId === wanted || (wanted.length >= MIN_PREFIX && run.runId.startsWith(wanted)),
  );
  const run = matches.length === 1 ? matches[0] : undefined;
  if (run === undefined) {
    const why =
      matches.length > 1
        ? `"${wanted}" matches ${matches.length} runs; give more of the id.`
        : `No adopted run has the id "${wanted}".`;
    return { text: `${why} ${ADOPTED_RUNS_TOOL} with action=list shows them all.`, runs: [], isError: true };
  }
  const lines = runLines(run);
  if (run.summary !== undefined) lines.push("", "summary:", run.summary);
  if (run.error !== undefined) lines.push("", `error: ${run.error}`);
  lines.push("", "inspect:", ...run.inspect.map((hint) => `  ${hint}`));
  const log = run.paths.outputs[0];
  const tail = log === undefined ? undefined : await tailOf(log, OUTPUT_TAIL_CHARS);
  if (tail !== undefined && tail.length > 0) lines.push("", `end of ${log}:`, tail);
  return { text: lines.join("\n"), runs: [deliveryKey(run)] };
}

function listRuns(runs: readonly AdoptedRun[], notes: readonly string[]): AdoptedRunsAnswer {
  if (runs.length === 0) {
    const noted = notes.length > 0 ? `\nNotes:\n${notes.map((note) => `- ${note}`).join("\n")}` : "";
    return { text: `No background work was adopted from earlier sessions.${noted}`, runs: [] };
  }
  const sorted = [...runs].sort((a, b) => OUTCOME_ORDER.indexOf(a.outcome) - OUTCOME_ORDER.indexOf(b.outcome));
  const lines = sorted.flatMap((run) => [...runLines(run), ""]);
  if (notes.length > 0) lines.push("Notes from the scan:", ...notes.slice(0, NOTES_SHOWN).map((note) => `- ${note}`));
  return { text: lines.join("\n").trimEnd(), runs: sorted.map(deliveryKey) };
}

function runLines(run: AdoptedRun): string[] {
  const lines = [`[${run.source}] ${run.runId} — ${run.outcome} (${run.state}): ${run.title}`];
  if (run.progress !== undefined) lines.push(`  progress: ${run.progress}`);
  if (run.parentRunId !== undefined) lines.push(`  part of workflow run ${run.parentRunId}`);
  lines.push(`  owner: ${run.owner.key} (${run.owner.depth} level${run.owner.depth === 1 ? "" : "s"} up)`);
  const started = formatTime(run.startedAt);
  const ended = formatTime(run.endedAt);
  if (started !== undefined) lines.push(`  started: ${started}${run.pid === undefined ? "" : ` (pid ${run.pid})`}`);
  if (ended !== undefined) lines.push(`  ended: ${ended}`);
  if (run.success !== undefined) lines.push(`  success: ${run.success}`);
  if (run.paths.runDir !== undefined) lines.push(`  directory: ${run.paths.runDir}`);
  if (run.paths.status !== undefined) lines.push(`  status: ${run.paths.status}`);
  if (run.paths.result !== undefined) lines.push(`  result: ${run.paths.result}`);
  for (const output of run.paths.outputs) lines.push(`  output: ${output}`);
  for (const file of run.paths.sessionFiles.slice(0, 5)) lines.push(`  session: ${file}`);
  return lines;
}

/** The last `maxChars` characters of a text file, cleaned; undefined if it cannot be read. */
async function tailOf(path: string, maxChars: number): Promise<string | undefined> {
  // A character is at most 4 bytes in UTF-8.
  const end = await readFileEnd(path, maxChars * 4);
  return end === undefined ? undefined : cleanText(end.bytes.toString("utf8").slice(-maxChars), maxChars);
}
