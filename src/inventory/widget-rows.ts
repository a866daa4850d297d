/**
 * Which of a parent's handoffs its widget shows, and in what order, when there are more than it
 * has rows for (the text of each row is format.ts's `formatChildrenWidget`).
 *
 * Invariants:
 * - Pure: rows in, rows out; the time now is a parameter.
 * - What needs the person comes first: a child waiting for input, one whose Pi failed (a non-zero
 *   exit code), one whose Pi ended without a word (killed, crashed) within `JUST_EXITED_MS`. Then
 *   the freshest change first (the
 *   state's `since`); equal times keep live children before exited, landed and removed ones, and
 *   then the store's order. So the row that changed last is never the one summed up in "N more".
 * - The sum of the rest counts only what `/handoffs` lists (it does not list removed handoffs).
 */
import { LIVE_CHILD_STATES, type ChildState } from "./status.ts";

/** How many handoffs the parent's widget lists before summing up the rest. */
export const WIDGET_ROWS = 4;
/** How long an exit without a word (killed, crashed) counts as just now: among those that need the person. */
export const JUST_EXITED_MS = 10 * 60_000;

export interface WidgetRowStatus {
  state: ChildState;
  since?: string;
  exitCode?: number;
}

/** The rows to show (in order) and how many more `/handoffs` lists. */
export function chooseWidgetRows<Row extends { status: WidgetRowStatus }>(
  rows: readonly Row[],
  now: number,
): { shown: Row[]; more: number } {
  const ranked = rows
    .map((row, index) => ({ row, index, at: sinceMs(row.status) }))
    .sort(
      (a, b) =>
        Number(!needsThePerson(a.row.status, a.at, now)) - Number(!needsThePerson(b.row.status, b.at, now)) ||
        b.at - a.at ||
        stateRank(a.row.status.state) - stateRank(b.row.status.state) ||
        a.index - b.index,
    )
    .map(({ row }) => row);
  return {
    shown: ranked.slice(0, WIDGET_ROWS),
    more: ranked.slice(WIDGET_ROWS).filter((row) => row.status.state !== "removed").length,
  };
}

/**
 * Waiting for an answer, never started (its postCreate commands failed), failed (a non-zero exit
 * code), or gone just now without a word (killed or crashed). A clean exit (code 0) is the person's
 * own quit: it sorts by its time like any change.
 */
function needsThePerson(status: WidgetRowStatus, at: number, now: number): boolean {
  if (status.state === "waiting_input" || status.state === "not_started") return true;
  if (status.state !== "exited" || status.exitCode === 0) return false;
  return status.exitCode !== undefined || now - at <= JUST_EXITED_MS;
}

/** When the row's state began; a state of unknown age sorts as the oldest. */
function sinceMs(status: WidgetRowStatus): number {
  const at = status.since === undefined ? Number.NaN : Date.parse(status.since);
  return Number.isFinite(at) ? at : Number.NEGATIVE_INFINITY;
}

/** Between equal times: live children, then exited, landed, removed. */
function stateRank(state: ChildState): number {
  if (LIVE_CHILD_STATES.has(state)) return 0;
  if (state === "exited") return 1;
  return state === "landed" ? 2 : 3;
}
