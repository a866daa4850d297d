/**
 * Relaunch every handoff of a repository (or of every repository) whose Pi is gone: after a
 * reboot, or a terminal server killed, one command brings them all back (`relaunch --all`).
 *
 * Invariants:
 * - Each handoff goes through the single relaunch (`relaunchHandoff`): its checks, its action lock,
 *   its reopened window, its launch and confirmation. Nothing here decides whether a Pi may start;
 *   a handoff with a live writer (one Herdr restored by itself included) is reported as already
 *   running, and one that gained a writer meanwhile is refused by the relaunch itself (or, when its
 *   pane's shell never became ready because that Pi holds it, found running once that failed).
 * - Bounded: at most `RELAUNCH_ALL_CONCURRENCY` relaunches at once.
 * - One line per handoff considered, in the inventory's order, whatever order they finished in.
 * - Handoffs with nothing to start a Pi on (no worktree, no child session) and landed ones are not
 *   relaunched; they are counted in one note, each kind named as it is, never as failures.
 * - Never focuses: several windows open at once, and none should take the terminal from the user.
 */
import { mapLimit } from "../concurrency.ts";
import { describeLocation } from "../mux/registry.ts";
import { counted } from "../text.ts";
import { buildInventory, inspectHandoff } from "../inventory/inventory.ts";
import { relaunchHandoff, type RelaunchDeps, type RelaunchOutcome } from "./relaunch.ts";
import type { HandoffReport, LiveWriter } from "../inventory/report-schema.ts";

/** How many relaunches run at once: each waits on a shell and a Pi starting, mostly idle. */
export const RELAUNCH_ALL_CONCURRENCY = 3;

export interface RelaunchAllScope {
  /** Only this repository's handoffs (its canonical common dir); undefined: every repository's. */
  repoCommonDir?: string;
  /** How the scope is named in the summary (the main checkout, or "every repository"). */
  name: string;
}

export type RelaunchAllCode = "restored" | "already_running" | "refused" | "failed" | "unconfirmed";

export interface RelaunchAllLine {
  id: string;
  branch: string;
  code: RelaunchAllCode;
  message: string;
}

export interface RelaunchAllResult {
  scope: RelaunchAllScope;
  lines: RelaunchAllLine[];
  /** Handoffs not relaunched because there is nothing to start a Pi on (no worktree or no session). */
  skipped: number;
  /** Handoffs not relaunched because their work was landed. */
  landed: number;
  /** Every handoff considered restored or already running. */
  ok: boolean;
}

/** What `relaunch --all` does with a handoff the inventory reports. */
export type RelaunchAllDecision = "already_running" | "relaunch" | "skip" | "landed";

/**
 * Pure: a live writer is already running; a worktree and a child session are something to start a
 * Pi on (the relaunch checks the rest); a landed one's work is done, so it is left alone.
 */
export function relaunchAllDecision(report: HandoffReport): RelaunchAllDecision {
  if (report.status.code === "removed") return "skip";
  if (report.status.code === "child_running") return "already_running";
  if (report.worktree.code !== "present" || !report.childSessionExists || report.childSessionFile === undefined)
    return "skip";
  if (report.child?.state === "landed") return "landed";
  return "relaunch";
}

/**
 * Whether a handoff is one to offer back (the notice after a reboot): its Pi is gone, its worktree
 * and session are intact, and a relaunch may start it now (no live or unknown writer, not in the
 * middle of being made, its terminal answering: a Herdr not started yet may still resume it).
 */
export function isRestorable(report: HandoffReport): boolean {
  return (
    relaunchAllDecision(report) === "relaunch" &&
    report.actions.includes("relaunch") &&
    report.workspace.code !== "unknown"
  );
}

export async function relaunchAll(
  deps: RelaunchDeps,
  scope: RelaunchAllScope,
  options: { concurrency?: number } = {},
): Promise<RelaunchAllResult> {
  const inventory = await buildInventory(deps, {
    ...(scope.repoCommonDir === undefined ? {} : { repoCommonDir: scope.repoCommonDir }),
  });
  let skipped = 0;
  let landed = 0;
  const considered: Array<{ report: HandoffReport; decision: "already_running" | "relaunch" }> = [];
  for (const report of inventory.handoffs) {
    const decision = relaunchAllDecision(report);
    if (decision === "skip") skipped += 1;
    else if (decision === "landed") landed += 1;
    else considered.push({ report, decision });
  }
  // Progress of many launches at once would interleave: each handoff says how it ended, once.
  const quiet: RelaunchDeps = { ...deps, progress: () => {}, tick: () => {} };
  const lines = await mapLimit(
    considered,
    options.concurrency ?? RELAUNCH_ALL_CONCURRENCY,
    async ({ report, decision }): Promise<RelaunchAllLine> => {
      const named = { id: report.id, branch: report.branch };
      if (decision === "already_running") {
        const writers = report.status.code === "child_running" ? report.status.writers : [];
        return { ...named, code: "already_running", message: runningMessage(writers) };
      }
      const outcome = await relaunchHandoff(quiet, report.id, { focus: false });
      // A pane whose shell never became ready may hold a Pi started there meanwhile (Herdr's
      // resume types `pi --session` into a restored pane): nothing was typed; if that Pi is now
      // seen on the session, the handoff runs.
      if (outcome.code === "failed" && outcome.reason === "shell_not_ready") {
        const now = await inspectHandoff(deps, report.id);
        if (now.code === "found" && now.report.status.code === "child_running")
          return { ...named, code: "already_running", message: runningMessage(now.report.status.writers) };
      }
      return { ...named, ...lineFor(outcome) };
    },
  );
  return {
    scope,
    lines,
    skipped,
    landed,
    ok: lines.every((line) => line.code === "restored" || line.code === "already_running"),
  };
}

function runningMessage(writers: readonly LiveWriter[]): string {
  return `Pi pid ${writers.map((writer) => writer.pid).join(", ")} has its session.`;
}

function lineFor(outcome: RelaunchOutcome): Pick<RelaunchAllLine, "code" | "message"> {
  switch (outcome.code) {
    case "running": {
      const pid = outcome.manifest.child.pid;
      return {
        code: "restored",
        message: `Pi${pid === undefined ? "" : ` pid ${pid}`} runs on its session in ${describeLocation(outcome.manifest.mux)}.`,
      };
    }
    case "refused":
      // Gained a writer since the inventory (Herdr's restore, a Pi started by hand): it runs.
      return { code: outcome.reason === "child_running" ? "already_running" : "refused", message: outcome.message };
    case "launch_unconfirmed":
      return { code: "unconfirmed", message: outcome.message };
    case "failed":
      return { code: "failed", message: outcome.message };
  }
}

const WORDS: Readonly<Record<RelaunchAllCode, string>> = {
  restored: "restored",
  already_running: "already running",
  refused: "refused",
  failed: "failed",
  unconfirmed: "unconfirmed",
};

/**
 * The report: one line per handoff, then one summary line (or one line alone when nothing was to
 * do). `cli` is how the user runs `pi-handoff` (src/child/pi-command.ts `recoveryCommand`).
 */
export function formatRelaunchAll(result: RelaunchAllResult, cli: string): string[] {
  const { lines, scope, skipped, landed } = result;
  const left = [
    ...(landed > 0 ? [counted(landed, "landed handoff")] : []),
    ...(skipped > 0
      ? [`${counted(skipped, landed > 0 ? "handoff" : "other handoff")} with no worktree or session to start a Pi on,`]
      : []),
  ];
  const note =
    left.length > 0
      ? ` (${left.join(" and ")} left alone; ${cli} list shows ${landed + skipped === 1 ? "it" : "them"})`
      : "";
  if (lines.length === 0)
    return [
      landed > 0
        ? `Nothing to relaunch: no handoff of ${scope.name} waits for a Pi${note}.`
        : `Nothing to relaunch: no handoff of ${scope.name} has a worktree and a session to start a Pi on${note}.`,
    ];
  if (lines.every((line) => line.code === "already_running"))
    return [
      `Nothing to relaunch: ${lines.length === 1 ? "the one handoff" : `all ${lines.length} handoffs`} of ${scope.name} already run${lines.length === 1 ? "s" : ""} a Pi on ${lines.length === 1 ? "its session" : "their sessions"}${note}.`,
    ];
  const width = Math.max(...lines.map((line) => WORDS[line.code].length));
  const counts = (Object.keys(WORDS) as RelaunchAllCode[]).flatMap((code) => {
    const count = lines.filter((line) => line.code === code).length;
    return count === 0 ? [] : [`${count} ${WORDS[code]}`];
  });
  return [
    ...lines.map((line) => `${WORDS[line.code].padEnd(width)}  ${line.branch} (${line.id}): ${line.message}`),
    `${counted(lines.length, "handoff")} of ${scope.name}: ${counts.join(", ")}${note}.`,
  ];
}
