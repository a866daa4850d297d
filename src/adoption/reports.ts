/**
 * Handoff reports: the child sends a short report to its parent (`handoff_report`,
 * `/handoff-report`), `pi-handoff land` sends a notice; the parent's own Pi delivers each once.
 *
 * Invariants:
 * - The child writes only the report store (manifest/child-reports.ts), never the parent's session;
 *   the parent's Pi turns each report into one message at an idle point (delivery.ts), and its
 *   ledger key `(handoff-report, report id, delivered)` keeps it from being delivered twice, across
 *   restarts (a report written while the parent is closed is delivered when it starts again:
 *   at session start, before any prompt, in every mode, so `pi -p --session <parent> "..."` reads it).
 * - A report carries what the child did, what is left, and the branch's commits since the base
 *   (bounded: the newest `MAX_REPORT_COMMITS`, with the total); text is redacted and bounded by the store.
 * - A delivered report is one message in the parent, drawn by the package's renderer
 *   (pi-extension/renderers.ts, from `ReportMessageDetailsSchema`), and addressed to that session
 *   alone: a later fork of it does not hand it on (session/addressed-messages.ts).
 */
import type { RecoveryGitPort } from "../git/types.ts";
import { MAX_REPORT_COMMITS, type ChildReport, type ChildReportStore } from "../manifest/child-reports.ts";
import type { ManifestStore } from "../manifest/store.ts";
import { errorSentence } from "../errors.ts";
import type { DeliveredTriple } from "./ledger.ts";
import type { DeliveryMessage } from "./delivery.ts";
import { counted } from "../text.ts";
import { REPORT_MESSAGE_TYPE, type ReportMessageDetails } from "../session/message-types.ts";
import type { Outcome } from "../outcome.ts";

export { REPORT_MESSAGE_TYPE } from "../session/message-types.ts";
export const REPORT_SOURCE = "handoff-report";
/** How long the summary line a renderer shows (the text's first line) may be. */
const SUMMARY_CHARS = 160;

/** The ledger key of a report's delivery: its id alone decides (a report is delivered once, whatever its kind). */
export function reportTriple(report: Pick<ChildReport, "id">): DeliveredTriple {
  return { source: REPORT_SOURCE, runId: report.id, outcome: "delivered" };
}

/**
 * Landings whose outcome this process already showed the person: the command that landed (in the
 * parent's own Pi, `/handoffs land`) said it. Delivered into this same Pi, their notice is for the
 * model only, not drawn a second time. Another process (the `pi-handoff` CLI, another Pi) never
 * delivers into this session, so what it marks is never read.
 */
const landingsShownHere = new Set<string>();

/** Marks the notice `reportId` as said already by this process (see `landingsShownHere`). */
export function landingShownHere(reportId: string): void {
  landingsShownHere.add(reportId);
}

/** The message the parent's model and person read (the model only, for a landing said already here). */
export function reportMessage(report: ChildReport): DeliveryMessage {
  const lines: string[] = [];
  if (report.kind === "landed" && report.landing !== undefined) {
    lines.push(
      `Handoff ${report.branch} (${report.handoffId}) was landed into ${report.landing.into} (${report.landing.strategy}); ${report.landing.into} is now at ${report.landing.result}.`,
    );
  } else {
    lines.push(`Report from handoff ${report.branch} (${report.handoffId}), sent ${report.createdAt}:`);
    lines.push(report.text);
  }
  if (report.done !== undefined && report.done.length > 0) lines.push(`Done: ${report.done}`);
  if (report.left !== undefined && report.left.length > 0) lines.push(`Left: ${report.left}`);
  if (report.commits.length > 0) {
    lines.push(
      `${report.kind === "landed" ? "Commits landed" : `Commits on ${report.branch}`} (${report.commitsTotal}):`,
    );
    for (const commit of report.commits) lines.push(`- ${commit.sha.slice(0, 12)} ${commit.subject}`);
    if (report.commits.length < report.commitsTotal)
      lines.push(`- ... and ${report.commitsTotal - report.commits.length} more`);
  } else if (report.kind === "report") {
    lines.push(`No commits on ${report.branch} yet.`);
  }
  const firstLine = report.text
    .split("\n")
    .find((line) => line.trim().length > 0)
    ?.trim();
  const details: ReportMessageDetails = {
    handoffId: report.handoffId,
    reportId: report.id,
    kind: report.kind,
    branch: report.branch,
    commits: report.commits.map((commit) => commit.sha),
    commitsTotal: report.commitsTotal,
    ...(report.kind === "report" && firstLine !== undefined
      ? { summary: firstLine.length > SUMMARY_CHARS ? `${firstLine.slice(0, SUMMARY_CHARS - 1)}…` : firstLine }
      : {}),
    ...(report.landing === undefined ? {} : { landing: report.landing }),
  };
  const display = !(report.kind === "landed" && landingsShownHere.has(report.id));
  return { customType: REPORT_MESSAGE_TYPE, content: lines.join("\n"), display, details };
}

export interface SendReportDeps {
  store: ManifestStore;
  reports: ChildReportStore;
  git: RecoveryGitPort;
  now(): Date;
}

export type SendReportFailure = "no_handoff" | "empty" | "failed";
export type SendReportOutcome = Outcome<{ report: ChildReport; message: string }, SendReportFailure>;

/** Writes the child's report for its parent, with the branch's commits since the base. */
export async function sendChildReport(
  deps: SendReportDeps,
  input: { handoffId: string; text: string; done?: string; left?: string },
): Promise<SendReportOutcome> {
  const read = await deps.store.read(input.handoffId);
  if (!read.ok)
    return {
      ok: false,
      code: "no_handoff",
      message: `This session's handoff ${input.handoffId} has no readable manifest (${read.message}); no report was sent.`,
    };
  const manifest = read.manifest;
  if ([input.text, input.done ?? "", input.left ?? ""].every((text) => text.trim().length === 0)) {
    return { ok: false, code: "empty", message: "The report is empty; say what was done and what is left." };
  }
  let commits: Awaited<ReturnType<RecoveryGitPort["commitsNotIn"]>>;
  try {
    const tip = await deps.git.resolveCommit(manifest.worktree.path, "HEAD");
    commits =
      tip === undefined
        ? { total: 0, commits: [] }
        : await deps.git.commitsNotIn(manifest.worktree.path, tip, [manifest.base.sha], { limit: MAX_REPORT_COMMITS });
  } catch (error) {
    // Said apart from a failed write: the report is fine, git is what to look at.
    return {
      ok: false,
      code: "failed",
      message: `The branch's commits could not be read, so no report was sent: ${errorSentence(error)}`,
    };
  }
  try {
    const report = await deps.reports.write(
      {
        handoffId: manifest.id,
        kind: "report",
        branch: manifest.branch,
        parentSessionFile: manifest.parent.sessionFile,
        text: input.text,
        ...(input.done === undefined ? {} : { done: input.done }),
        ...(input.left === undefined ? {} : { left: input.left }),
        // git lists the newest first; the parent reads them in the order they were made.
        commits: [...commits.commits].reverse(),
        commitsTotal: commits.total,
      },
      deps.now(),
    );
    return {
      ok: true,
      report,
      message: `Report sent to the parent session (${counted(commits.total, "commit")} on ${manifest.branch}); it is delivered there at its next idle point.`,
    };
  } catch (error) {
    return { ok: false, code: "failed", message: `The report could not be written: ${errorSentence(error)}` };
  }
}

/** Reports of these handoffs not yet delivered or queued (`known`), oldest first. */
export async function undeliveredReports(
  reports: ChildReportStore,
  handoffIds: readonly string[],
  known: (triple: DeliveredTriple) => boolean,
): Promise<ChildReport[]> {
  const found: ChildReport[] = [];
  for (const id of handoffIds) {
    // Known ids are skipped by name, so a refresh reads only the files of new reports.
    const listed = await reports.list(id, { skip: (reportId) => known(reportTriple({ id: reportId })) });
    found.push(...listed.reports);
  }
  return found.sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * Whether reports delivered at session start may start a turn (`reportsTriggerTurn`): only in the
 * TUI. In print, JSON and RPC mode a prompt follows at once, and a turn started first would race it;
 * that prompt is the turn that reads them.
 */
export function startDeliveryTriggersTurn(reportsTriggerTurn: boolean, mode: string): boolean {
  return reportsTriggerTurn && mode === "tui";
}
