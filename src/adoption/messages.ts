/**
 * The messages lineage adoption puts into a session: one resume message (everything adopted at
 * start), one completion message per adopted run that finishes later, and a reminder of the runs
 * still active after a compaction.
 *
 * Invariants:
 * - Content is bounded (`MAX_MESSAGE_CHARS`) however many runs there are: runs that do not fit
 *   are counted, and the `adopted_runs` tool lists them all.
 * - Text from other extensions' files arrives already cleaned (`text.ts`); paths and ids are put
 *   on one line each.
 * - `details` is plain data decoded by `LineageMessageDetailsSchema` (the renderer relies on it).
 */
import { z } from "zod";
import { describeAncestor } from "./ancestry.ts";
import { cleanLine, formatTime } from "./text.ts";
import type { AdoptedRun } from "./types.ts";

export const LINEAGE_MESSAGE_TYPE = "handoff-worktree-lineage";
export const MAX_MESSAGE_CHARS = 8_000;
export const ADOPTED_RUNS_TOOL = "adopted_runs";
/** `details` lists at most this many runs (the ledger entry lists every delivered one). */
const MAX_DETAIL_RUNS = 200;

export const MESSAGE_KINDS = ["resume", "completion", "active-reminder"] as const;

const RunBriefSchema = z.object({
  source: z.string(),
  runId: z.string(),
  outcome: z.string(),
  state: z.string(),
  title: z.string(),
  parentRunId: z.string().optional(),
});
export type RunBrief = z.infer<typeof RunBriefSchema>;

export const LineageMessageDetailsSchema = z.object({
  kind: z.enum(MESSAGE_KINDS),
  runs: z.array(RunBriefSchema),
  /** Runs left out of the content to keep it bounded. */
  omitted: z.number().int().nonnegative(),
});
export type LineageMessageDetails = z.infer<typeof LineageMessageDetailsSchema>;

export interface LineageMessage {
  customType: typeof LINEAGE_MESSAGE_TYPE;
  content: string;
  display: true;
  details: LineageMessageDetails;
}

function brief(run: AdoptedRun): RunBrief {
  return {
    source: run.source,
    runId: run.runId,
    outcome: run.outcome,
    state: run.state,
    title: run.title,
    ...(run.parentRunId === undefined ? {} : { parentRunId: run.parentRunId }),
  };
}

function ownerLabel(run: AdoptedRun): string {
  if (run.owner.depth <= 0) return `owner ${cleanLine(run.owner.key, 300)}`;
  return `started by the ${describeAncestor({ depth: run.owner.depth, ref: run.owner.key, sessionFile: run.owner.key })}`;
}

/** The lines for one run: a headline, then indented detail lines. */
function runBlock(run: AdoptedRun, indent = ""): string[] {
  const parts = [`${indent}- [${run.source}] ${run.runId}: ${run.title}`];
  const facts: string[] = [];
  if (run.outcome === "finished")
    facts.push(run.success === undefined ? run.state : `${run.state}${run.success ? "" : " (not successful)"}`);
  else if (run.outcome === "active") facts.push(run.state);
  if (run.progress !== undefined) facts.push(run.progress);
  const started = formatTime(run.startedAt);
  if (started !== undefined && run.outcome !== "notice") facts.push(`started ${started}`);
  const ended = formatTime(run.endedAt);
  if (ended !== undefined && run.outcome === "finished") facts.push(`ended ${ended}`);
  if (facts.length > 0) parts[0] += ` (${facts.join("; ")})`;
  const sub = `${indent}  `;
  if (run.source !== "handoff") parts.push(`${sub}${ownerLabel(run)}`);
  if (run.summary !== undefined) parts.push(`${sub}summary: ${run.summary.replace(/\n+/g, `\n${sub}  `)}`);
  if (run.error !== undefined) parts.push(`${sub}error: ${run.error.replace(/\n+/g, " ")}`);
  if (run.paths.result !== undefined) parts.push(`${sub}result: ${run.paths.result}`);
  if (run.paths.outputs.length > 0)
    parts.push(
      `${sub}output: ${run.paths.outputs.slice(0, 3).join(", ")}${run.paths.outputs.length > 3 ? ` (+${run.paths.outputs.length - 3})` : ""}`,
    );
  if (run.source !== "handoff" && run.inspect.length > 0)
    parts.push(`${sub}inspect: ${run.inspect.slice(0, 2).join("; or ")}`);
  return parts;
}

/** Text that grows block by block while it fits in `max` characters, counting what did not. */
class BoundedText {
  private readonly lines: string[] = [];
  private length = 0;
  private readonly max: number;
  omitted = 0;
  constructor(max: number) {
    this.max = max;
  }
  /** Headers: always kept. */
  push(...lines: string[]): void {
    for (const line of lines) {
      this.lines.push(line);
      this.length += line.length + 1;
    }
  }
  fits(lines: readonly string[], reserve: number): boolean {
    return this.length + lines.reduce((sum, line) => sum + line.length + 1, 0) <= this.max - reserve;
  }
  /** The whole block if it fits, else its first line alone, else nothing (counted as omitted). */
  addBlock(lines: readonly string[], reserve: number): void {
    if (this.fits(lines, reserve)) this.push(...lines);
    else if (lines.length > 1 && this.fits(lines.slice(0, 1), reserve)) this.push(lines[0] ?? "");
    else this.omitted += 1;
  }
  text(): string {
    return this.lines.join("\n").trimEnd();
  }
}

const SECTION_ORDER: Array<{ outcome: AdoptedRun["outcome"]; source?: string; heading: string }> = [
  { outcome: "active", heading: "Still running" },
  { outcome: "interrupted", heading: "Interrupted (the process that ran it is gone; no result)" },
  { outcome: "finished", heading: "Finished, result not delivered to this conversation before" },
  { outcome: "notice", source: "pi-workflows", heading: "pi-workflows runs bound to earlier sessions" },
];

/** Room kept for the closing line that counts what was left out. */
const TAIL_RESERVE = 200;

/**
 * Everything adopted at start. `runs` are the undelivered ones; handoff notices go first, as the
 * context of the rest.
 */
export function buildResumeMessage(runs: readonly AdoptedRun[], maxChars = MAX_MESSAGE_CHARS): LineageMessage {
  const out = new BoundedText(maxChars);
  out.push(
    "# Background work adopted from earlier sessions",
    "",
    "This session continues from earlier sessions. Background work that they started, and that this conversation has not been told about, is listed below; this session has adopted it, and results of runs still running will be delivered here when they finish. Nothing here needs action unless the user asks for it.",
    `Use the ${ADOPTED_RUNS_TOOL} tool to list or inspect these runs and find their output.`,
  );
  const handoffs = runs.filter((run) => run.source === "handoff");
  const own = handoffs.find((run) => run.state === "this session");
  if (own !== undefined)
    out.push("", `This session is a handoff: ${own.title}, ${own.progress ?? ""}.`.replace(/, \.$/, "."));
  const earlier = handoffs.filter((run) => run !== own);
  if (earlier.length > 0) {
    out.push("Earlier handoffs in this lineage:");
    for (const run of earlier) out.addBlock([`- ${run.runId}: ${run.title}`], TAIL_RESERVE);
  }
  const children = new Map<string, AdoptedRun[]>();
  for (const run of runs) {
    if (run.parentRunId !== undefined && runs.some((parent) => parent.runId === run.parentRunId)) {
      children.set(run.parentRunId, [...(children.get(run.parentRunId) ?? []), run]);
    }
  }
  const isNested = (run: AdoptedRun) => run.parentRunId !== undefined && children.has(run.parentRunId);
  for (const section of SECTION_ORDER) {
    const members = runs.filter(
      (run) =>
        run.outcome === section.outcome &&
        run.source !== "handoff" &&
        (section.source === undefined || run.source === section.source) &&
        !isNested(run),
    );
    if (members.length === 0) continue;
    out.push("", `## ${section.heading} (${members.length})`);
    for (const run of members) {
      const lines = runBlock(run);
      for (const child of children.get(run.runId) ?? [])
        lines.push(
          ...runBlock(child, "    ").map((line, i) => (i === 0 ? line.replace("- [", `- ${child.outcome}: [`) : line)),
        );
      out.addBlock(lines, TAIL_RESERVE);
    }
  }
  if (out.omitted > 0)
    out.push("", `[${out.omitted} more entries did not fit in this message; ${ADOPTED_RUNS_TOOL} lists them all.]`);
  return {
    customType: LINEAGE_MESSAGE_TYPE,
    content: out.text(),
    display: true,
    details: { kind: "resume", runs: runs.slice(0, MAX_DETAIL_RUNS).map(brief), omitted: out.omitted },
  };
}

/** One adopted run reached its end (finished, or its process vanished) after adoption. */
export function buildCompletionMessage(run: AdoptedRun, maxChars = MAX_MESSAGE_CHARS): LineageMessage {
  const out = new BoundedText(maxChars);
  const verb = run.outcome === "interrupted" ? "was interrupted" : "finished";
  out.push(
    `# Adopted background run ${verb}: ${run.runId}`,
    "",
    `A run started by an earlier session ${verb}. It was adopted by this session; nothing here needs action unless the user asks for it.`,
    "",
  );
  out.addBlock(runBlock(run), TAIL_RESERVE);
  return {
    customType: LINEAGE_MESSAGE_TYPE,
    content: out.text(),
    display: true,
    details: { kind: "completion", runs: [brief(run)], omitted: out.omitted },
  };
}

/** After compaction: the adopted runs still running, so the summary cannot lose them. */
export function buildActiveReminder(runs: readonly AdoptedRun[], maxChars = MAX_MESSAGE_CHARS): LineageMessage {
  const out = new BoundedText(maxChars);
  out.push(
    "# Adopted background work still running",
    "",
    `Reminder after compaction: these runs, started by earlier sessions and adopted by this one, are still running; their results will be delivered here. ${ADOPTED_RUNS_TOOL} lists and inspects them.`,
    "",
  );
  for (const run of runs) out.addBlock(runBlock(run), TAIL_RESERVE);
  if (out.omitted > 0) out.push("", `[${out.omitted} more runs did not fit; ${ADOPTED_RUNS_TOOL} lists them all.]`);
  return {
    customType: LINEAGE_MESSAGE_TYPE,
    content: out.text(),
    display: true,
    details: { kind: "active-reminder", runs: runs.slice(0, MAX_DETAIL_RUNS).map(brief), omitted: out.omitted },
  };
}

/** A one-line summary for the TUI's collapsed view. */
export function summarizeDetails(details: LineageMessageDetails): string {
  const count = (outcome: string) =>
    details.runs.filter((run) => run.outcome === outcome && run.source !== "handoff").length;
  switch (details.kind) {
    case "resume": {
      const parts = [
        count("active") > 0 ? `${count("active")} running` : undefined,
        count("interrupted") > 0 ? `${count("interrupted")} interrupted` : undefined,
        count("finished") > 0 ? `${count("finished")} finished` : undefined,
        count("notice") > 0 ? `${count("notice")} workflow notice${count("notice") === 1 ? "" : "s"}` : undefined,
      ].filter((part): part is string => part !== undefined);
      return `Adopted background work from earlier sessions: ${parts.join(" · ") || "none"}`;
    }
    case "completion": {
      const run = details.runs[0];
      return run === undefined
        ? "Adopted run finished"
        : `Adopted run ${run.outcome === "interrupted" ? "interrupted" : "finished"}: ${run.title} (${run.state})`;
    }
    case "active-reminder":
      return `Adopted runs still running: ${details.runs.length}`;
  }
}
