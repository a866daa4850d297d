/**
 * How this package's messages look in the TUI: compact by default (a title, the few facts that
 * matter, and how to see more), the full text when expanded.
 *
 * The text builders are pure and exported, so their output is tested without a terminal; the
 * styling (`style`) is applied by the renderers with Pi's theme.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Box, Text } from "@earendil-works/pi-tui";
import type { ZodType } from "zod";
import { ADOPTED_RUNS_TOOL, summarizeDetails, type LineageMessageDetails } from "../src/adoption/messages.ts";
import {
  REPORT_MESSAGE_TYPE,
  ReportMessageDetailsSchema,
  type ReportMessageDetails,
} from "../src/session/message-types.ts";
import { counted } from "../src/text.ts";
import { HANDOFF_MESSAGE_TYPE, HandoffDetailsSchema, type HandoffDetails } from "../src/session/handoff-message.ts";

/** How many adopted runs the collapsed lineage message lists by name. */
const COMPACT_RUNS = 3;
const TASK_PREVIEW_CHARS = 100;

/** The roles of the pieces of a compact message; the renderer maps them to theme colours. */
export interface Styler {
  title(text: string): string;
  strong(text: string): string;
  dim(text: string): string;
}

export const PLAIN: Styler = { title: (t) => t, strong: (t) => t, dim: (t) => t };

/** The collapsed handoff message: branch, base, worktree, and the task's first line (or that there is none). */
export function compactHandoffText(
  details: HandoffDetails,
  content: string,
  expandHint: string,
  style: Styler = PLAIN,
): string {
  const lines = [
    `${style.title("⇢ Handed off to a worktree")} ${style.strong(details.branch)} from ${details.baseRef} (${details.baseSha.slice(0, 12)})`,
    style.dim(details.worktreePath),
  ];
  const task = details.hasTask ? taskPreview(content) : undefined;
  lines.push(details.hasTask ? `task: ${task ?? "(see the full message)"}` : style.dim("no task: waiting for you"));
  // Pi styles the hint itself (and knows the user's key for it).
  if (expandHint !== "") lines.push(expandHint);
  return lines.join("\n");
}

/** The first line of the task section of the handoff message, shortened. */
export function taskPreview(content: string): string | undefined {
  const match = /^## Task\n\n([^\n]+)/m.exec(content);
  const line = match?.[1]?.trim();
  if (line === undefined || line === "") return undefined;
  return line.length > TASK_PREVIEW_CHARS ? `${line.slice(0, TASK_PREVIEW_CHARS - 1)}…` : line;
}

/** The collapsed lineage message: the summary, the first few runs by name, the tool and the expand key. */
export function compactLineageText(
  details: LineageMessageDetails | undefined,
  expandHint: string,
  style: Styler = PLAIN,
): string {
  if (details === undefined) return style.title("⟲ Adopted background work");
  const lines = [style.title(`⟲ ${summarizeDetails(details)}`)];
  const runs = details.runs.filter((run) => run.source !== "handoff");
  for (const run of runs.slice(0, COMPACT_RUNS))
    lines.push(
      `  ${run.outcome === "active" ? "●" : run.outcome === "interrupted" ? "✗" : "✓"} ${run.title} ${style.dim(`(${run.source}, ${run.state})`)}`,
    );
  const more = runs.length - Math.min(runs.length, COMPACT_RUNS) + details.omitted;
  if (more > 0) lines.push(style.dim(`  … and ${more} more`));
  lines.push(
    `${style.dim(`${ADOPTED_RUNS_TOOL} lists and inspects them`)}${expandHint === "" ? "" : style.dim(" · ") + expandHint}`,
  );
  return lines.join("\n");
}

/**
 * The collapsed report message (a child's report, or the notice of its landing): one line naming
 * the handoff and what came of it, the report's first line, and the expand key.
 */
export function compactReportText(
  details: ReportMessageDetails,
  content: string,
  expandHint: string,
  style: Styler = PLAIN,
): string {
  const commits = counted(details.commitsTotal ?? details.commits.length, "commit");
  const lines: string[] = [];
  if (details.kind === "landed" && details.landing !== undefined) {
    const { into, strategy, result } = details.landing;
    lines.push(
      `${style.title("⇠ Handoff")} ${style.strong(details.branch)} ${style.title(`was landed into ${into}`)} (${strategy}) ${style.dim(`· ${commits} · ${into} is now at ${result.slice(0, 12)}`)}`,
    );
  } else if (details.kind === "landed") {
    // An older notice without its landing's details: its own first line says it.
    lines.push(`${style.title("⇠")} ${content.split("\n")[0] ?? ""}`);
  } else {
    lines.push(`${style.title("⇠ Report from handoff")} ${style.strong(details.branch)} ${style.dim(`· ${commits}`)}`);
    if (details.summary !== undefined) lines.push(details.summary);
  }
  if (expandHint !== "") lines.push(expandHint);
  return lines.join("\n");
}

/**
 * A message drawn collapsed by `compact` (with the expand key), and expanded as its first
 * `headLines` lines then the whole text; a message whose details do not decode shows its text.
 */
function registerCompactRenderer<T>(
  pi: ExtensionAPI,
  customType: string,
  schema: ZodType<T>,
  compact: (details: T, content: string, expandHint: string, style: Styler) => string,
  headLines: number,
): void {
  pi.registerMessageRenderer(customType, (message, options, theme) => {
    const parsed = schema.safeParse(message.details);
    const content = typeof message.content === "string" ? message.content : "";
    const style: Styler = {
      title: (t) => theme.fg("accent", t),
      strong: (t) => theme.bold(t),
      dim: (t) => theme.fg("dim", t),
    };
    let text: string;
    if (!parsed.success) {
      text = content;
    } else if (options.expanded) {
      text = `${compact(parsed.data, content, "", style).split("\n").slice(0, headLines).join("\n")}\n\n${content}`;
    } else {
      text = compact(parsed.data, content, options.keyHint("app.tools.expand", "to expand"), style);
    }
    const box = new Box(options.outputPad, 1, (t) => theme.bg("customMessageBg", t));
    box.addChild(new Text(text, 0, 0));
    return box;
  });
}

export function registerRenderers(pi: ExtensionAPI): void {
  registerCompactRenderer(pi, HANDOFF_MESSAGE_TYPE, HandoffDetailsSchema, compactHandoffText, 2);
  registerCompactRenderer(pi, REPORT_MESSAGE_TYPE, ReportMessageDetailsSchema, compactReportText, 1);
}
