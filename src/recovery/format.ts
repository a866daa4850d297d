/**
 * Human-readable text for recovery's reports, shared by `pi-handoff` and `/handoffs`.
 *
 * Invariants: pure (reports in, text out; the time now is a parameter, defaulting to the clock);
 * plain ASCII layout, no colours or terminal codes, so the same text works in a pipe, in Pi's
 * notifications and in print mode.
 */
import { CHILD_STATE_LABELS, formatDuration, type ChildState } from "./status.ts";
import { describeLocation } from "../mux/describe.ts";
import type { HandoffReport, HandoffStatus, InventoryReport } from "./report-schema.ts";

/** One short phrase for a status. */
export function describeStatus(status: HandoffStatus): string {
  switch (status.code) {
    case "removed":
      return "removed";
    case "child_running":
      return `child running (pid ${status.writers.map((writer) => writer.pid).join(", ")})`;
    case "unfinished":
      if (status.inProgress) return `being set up (at ${status.step})`;
      return status.owner !== undefined && !status.owner.alive ? `stopped at ${status.step} (pid ${status.owner.pid} gone)` : `stopped at ${status.step}`;
    case "failed":
      return `failed at ${status.step}`;
    case "worktree_missing":
      return "worktree missing";
    case "prunable":
      return "worktree gone (prunable)";
    case "orphaned_checkout":
      return "orphaned checkout";
    case "unconfirmed":
      return "launch unconfirmed";
    case "workspace_closed":
      return "window closed, no Pi";
    case "no_child":
      return "no Pi running";
  }
}

/** The table `pi-handoff list` prints (and `/handoffs` in print mode). */
export function formatInventory(inventory: InventoryReport): string {
  const lines: string[] = [];
  const now = Date.parse(inventory.generatedAt);
  if (inventory.handoffs.length === 0) {
    lines.push(`No handoffs in ${inventory.agentDir}.`);
  } else {
    const rows = inventory.handoffs.map((handoff) => [
      handoff.id,
      describeStatus(handoff.status),
      describeChild(handoff, now),
      handoff.branch,
      handoff.flags.join(",") || "-",
      handoff.actions.join(",") || "-",
    ]);
    const header = ["ID", "STATUS", "CHILD", "BRANCH", "FLAGS", "ACTIONS"];
    const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)));
    const render = (row: readonly string[]): string =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join("  ")
        .trimEnd();
    lines.push(render(header), ...rows.map(render));
  }
  if (inventory.hiddenRemoved > 0) lines.push(`(${inventory.hiddenRemoved} removed handoff(s) not shown; pi-handoff list --all shows them.)`);
  // The store's error names the file already: say it once.
  for (const broken of inventory.unreadable) lines.push(broken.error.includes(broken.path) ? `Unreadable: ${broken.error}` : `Unreadable manifest ${broken.path}: ${broken.error}`);
  return lines.join("\n");
}

/** One line for a picker (`/handoffs`); `now` measures the child's time in its state. */
export function formatPickerLabel(handoff: HandoffReport, now: number = Date.now()): string {
  const flags = handoff.flags.length > 0 ? ` [${handoff.flags.join(", ")}]` : "";
  const child = handoff.child === undefined ? "" : `, child ${describeChild(handoff, now)}`;
  return `${handoff.branch}: ${describeStatus(handoff.status)}${child}${flags} (${handoff.id})`;
}

/** Everything `pi-handoff inspect` shows about one handoff. */
export function formatReport(handoff: HandoffReport, now: number = Date.now()): string {
  const lines = [`Handoff ${handoff.id}`];
  lines.push(`  status:        ${describeStatus(handoff.status)} (manifest state ${handoff.state})`);
  if (handoff.status.code === "failed" || handoff.status.code === "unconfirmed") lines.push(`  error:         ${handoff.status.message}`);
  if (handoff.status.code === "orphaned_checkout") lines.push(`  why orphaned:  ${handoff.status.reason}`);
  if (handoff.status.code === "child_running") {
    for (const writer of handoff.status.writers) lines.push(`  live Pi:       pid ${writer.pid} (${writer.evidence.join(", ")})`);
  }
  if (handoff.child !== undefined) lines.push(`  child:         ${describeChild(handoff, now)} (${handoff.child.basis})`);
  if (handoff.landing !== undefined) lines.push(`  landing:       ${describeLanding(handoff.landing)}`);
  lines.push(`  repository:    ${handoff.repo}`);
  lines.push(`  branch:        ${handoff.branch} ${describeBranch(handoff)}`);
  lines.push(`  base:          ${handoff.base.ref} at ${handoff.base.sha.slice(0, 12)}`);
  lines.push(`  worktree:      ${handoff.worktreePath} (${describeWorktree(handoff)})`);
  const unrecorded = (kind: "window" | "session") => (handoff.unrecorded?.includes(kind) === true ? ", made but never recorded: the handoff was killed first" : "");
  lines.push(`  window:        ${describeLocation(handoff.mux)} (${describeWorkspace(handoff)}${unrecorded("window")})`);
  lines.push(
    `  child session: ${handoff.childSessionFile ?? "none"}${handoff.childSessionFile === undefined ? "" : handoff.childSessionExists ? "" : " (missing)"}${handoff.unrecorded?.includes("session") === true ? ` (${unrecorded("session").slice(2)})` : ""}`,
  );
  if (handoff.changes !== undefined) {
    const { dirtyFiles, untrackedFiles } = handoff.changes;
    if (dirtyFiles.length + untrackedFiles.length === 0) lines.push("  changes:       none uncommitted");
    for (const file of dirtyFiles) lines.push(`  modified:      ${file}`);
    for (const file of untrackedFiles) lines.push(`  untracked:     ${file}`);
  }
  if (handoff.branchState.code === "present") {
    const { unmerged } = handoff.branchState;
    for (const commit of unmerged.commits) lines.push(`  unmerged:      ${commit.sha.slice(0, 12)} ${commit.subject}`);
    if (unmerged.commits.length < unmerged.total) lines.push(`  unmerged:      ... and ${unmerged.total - unmerged.commits.length} more`);
  }
  if (handoff.flags.length > 0) lines.push(`  flags:         ${handoff.flags.join(", ")}`);
  for (const problem of handoff.problems) lines.push(`  could not check: ${problem}`);
  lines.push(
    handoff.actions.length > 0
      ? `  next:          ${handoff.actions.map((action) => `pi-handoff ${action === "prune" ? "prune" : `${action} ${handoff.id}`}`).join(" | ")}`
      : "  next:          nothing to do",
  );
  return lines.join("\n");
}

/** `idle 3m`: the child's state and how long it has been in it. */
export function describeChild(handoff: Pick<HandoffReport, "child">, now: number): string {
  const child = handoff.child;
  if (child === undefined) return "-";
  const since = child.since === undefined ? Number.NaN : Date.parse(child.since);
  const label = CHILD_STATE_LABELS[child.state];
  return Number.isFinite(since) && Number.isFinite(now) ? `${label} ${formatDuration(now - since)}` : label;
}

function describeLanding(landing: NonNullable<HandoffReport["landing"]>): string {
  const what = `${landing.commits} commit(s) into ${landing.into} by ${landing.strategy}, ${landing.from.slice(0, 12)} -> ${landing.to.slice(0, 12)}`;
  switch (landing.verdict) {
    case "landed":
      return `landed ${what}`;
    case "landed_unrecorded":
      return `interrupted after the target moved: ${landing.into} is at the new commit ${landing.to.slice(0, 12)} (landed; pi-handoff land ${landing.handoffId} records it)`;
    case "not_landed":
      return `interrupted before the target moved: ${landing.into} is still at the old commit ${landing.from.slice(0, 12)} (nothing landed; run pi-handoff land again)`;
    case "abandoned":
      return `abandoned (${what}); nothing landed`;
    case "unknown":
      return `interrupted (${what}); ${landing.into} is now at ${landing.targetAt?.slice(0, 12) ?? "no commit"}, neither the old nor the new commit: it moved since`;
  }
}

function describeBranch(handoff: HandoffReport): string {
  const state = handoff.branchState;
  switch (state.code) {
    case "gone":
      return "(deleted)";
    case "unknown":
      return "(could not be read)";
    case "present": {
      const parts = [`${state.aheadOfBase} commit(s) since the base`];
      parts.push(state.unmerged.total > 0 ? `${state.unmerged.total} not merged into ${state.mergeTarget.ref}` : `all in ${state.mergeTarget.ref}`);
      if (state.unpushed.total > 0) parts.push(`${state.unpushed.total} not pushed`);
      return `(${parts.join("; ")})`;
    }
  }
}

function describeWorktree(handoff: HandoffReport): string {
  switch (handoff.worktree.code) {
    case "present":
      return "present";
    case "missing":
      return "missing";
    case "prunable":
      return "missing; git still lists it";
    case "orphaned":
      return `orphaned: ${handoff.worktree.reason}`;
  }
}

function describeWorkspace(handoff: HandoffReport): string {
  switch (handoff.workspace.code) {
    case "open": {
      // What Herdr itself sees in the pane, when it says (its agent status, the session it holds).
      const agent = handoff.workspace.agent;
      if (agent === undefined) return "open";
      const session = agent.sessionFile === undefined ? "" : agent.sessionFile === handoff.childSessionFile ? " on the child session" : ` on ${agent.sessionFile}`;
      return `open (Herdr: agent ${agent.status}${session})`;
    }
    case "closed":
      return "closed";
    case "none":
      return "never opened";
    case "unknown":
      return "unknown";
  }
}

/** How many handoffs the parent's widget lists before summing up the rest. */
const WIDGET_ROWS = 4;

/** The parent's widget: one line per own handoff (`handoff feat/x  idle 2m`), the newest last, at most a few. */
export function formatChildrenWidget(handoffs: readonly { id: string; branch: string; status: { state: ChildState; since?: string } }[], now: number): string[] {
  const shown = handoffs.slice(-WIDGET_ROWS);
  const width = Math.max(...shown.map((handoff) => handoff.branch.length));
  const lines = shown.map((handoff) => `handoff ${handoff.branch.padEnd(width)}  ${describeChild({ child: { ...handoff.status, basis: "" } }, now)}`);
  if (handoffs.length > shown.length) lines.unshift(`handoffs: ${handoffs.length - shown.length} more (/handoffs lists them all)`);
  return lines;
}
