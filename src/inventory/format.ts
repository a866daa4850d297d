/**
 * Human-readable text for recovery's reports, shared by `pi-handoff` and `/handoffs`.
 *
 * Invariants: pure (reports in, text out; the time now is a parameter, defaulting to the clock);
 * plain ASCII layout, no colours or terminal codes, so the same text works in a pipe, in Pi's
 * notifications and in print mode; every line is `printable` (text/printable): a commit subject or
 * a file name with terminal escapes or line breaks in it shows them escaped, one line each.
 * The list is cut to a width only when one is given (`fitColumns`: the caller decides, from
 * `COLUMNS` or the terminal), never for JSON; even then an id and the ACTIONS are never cut (a
 * person copies them into the next command): a row that cannot fit is wider than the terminal.
 */
import { CHILD_STATE_LABELS, formatDuration, type ChildState } from "./status.ts";
import { CONTROL_CHARACTERS, counted, oneLine, printable, stripPeriod } from "../text.ts";
import { describeLocation } from "../mux/registry.ts";
import type { ChildReport } from "../manifest/child-reports.ts";
import { sanitizeText } from "../session/redact.ts";
import type {
  HandoffReport,
  HandoffStatus,
  InventoryReport,
  MergedFact,
  PortCheck,
  StepTimes,
} from "./report-schema.ts";
import { formatStepTimes } from "./step-times.ts";
import { chooseWidgetRows } from "./widget-rows.ts";

/** One short phrase for a status. */
export function describeStatus(status: HandoffStatus): string {
  switch (status.code) {
    case "removed":
      return "removed";
    case "child_running":
      return `child running (pid ${status.writers.map((writer) => writer.pid).join(", ")})`;
    case "unfinished":
      if (status.inProgress) return `being set up (at ${status.step})`;
      return status.owner !== undefined && !status.owner.alive
        ? `stopped at ${status.step} (pid ${status.owner.pid} gone)`
        : `stopped at ${status.step}`;
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

/**
 * The table `pi-handoff list` prints (and `/handoffs` in print mode); `repo`: only that
 * repository's were asked for; with `forecast` (a short mark per handoff id, forecast.ts) a
 * FORECAST column before the actions; with `width` (the terminal's columns) the table fits it
 * (`fitColumns`).
 */
export function formatInventory(
  inventory: InventoryReport,
  scope: { repo?: string; forecast?: ReadonlyMap<string, string>; width?: number } = {},
): string {
  const forecast = scope.forecast;
  const lines: string[] = [];
  const now = Date.parse(inventory.generatedAt);
  if (inventory.handoffs.length === 0) {
    lines.push(
      scope.repo === undefined
        ? `No handoffs in ${inventory.agentDir}.`
        : `No handoffs of the repository at ${scope.repo} in ${inventory.agentDir}.`,
    );
  } else {
    // The ports' column only where some handoff holds ports: the table stays as it was without.
    const withPorts = inventory.handoffs.some((handoff) => handoff.ports !== undefined);
    const rows = inventory.handoffs.map((handoff) =>
      [
        handoff.id,
        describeStatus(handoff.status),
        describeChild(handoff, now),
        handoff.branch,
        ...(withPorts ? [handoff.ports?.join(",") ?? "-"] : []),
        handoff.flags.join(",") || "-",
        ...(forecast === undefined ? [] : [forecast.get(handoff.id) ?? "-"]),
        actionsCell(handoff),
      ].map(printable),
    );
    const header = [
      "ID",
      "STATUS",
      "CHILD",
      "BRANCH",
      ...(withPorts ? ["PORTS"] : []),
      "FLAGS",
      ...(forecast === undefined ? [] : ["FORECAST"]),
      "ACTIONS",
    ];
    const natural = header.map((title, column) =>
      Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
    );
    const widths =
      scope.width === undefined
        ? natural
        : fitColumns(natural, header, scope.width, (title) => !UNCUT_COLUMNS.has(title));
    const render = (row: readonly string[]): string =>
      row
        .map((cell, column) => {
          const width = widths[column] ?? 0;
          const fitted = cell.length > width ? `${cell.slice(0, Math.max(0, width - 1))}~` : cell;
          return column === row.length - 1 ? fitted : fitted.padEnd(width);
        })
        .join("  ")
        .trimEnd();
    lines.push(render(header), ...rows.map(render));
  }
  if (inventory.hiddenRemoved > 0)
    lines.push(`(${counted(inventory.hiddenRemoved, "removed handoff")} not shown; pi-handoff list --all shows them.)`);
  // The store's error names the file already: say it once.
  for (const broken of inventory.unreadable)
    lines.push(
      broken.error.includes(broken.path)
        ? `Unreadable: ${broken.error}`
        : `Unreadable manifest ${broken.path}: ${broken.error}`,
    );
  return lines.map(printable).join("\n");
}

/** The list's ACTIONS cell: what works now, and while a Pi runs, that a removal waits for it to quit. */
function actionsCell(handoff: HandoffReport): string {
  const actions = handoff.actions.join(",");
  if (handoff.status.code !== "child_running") return actions || "-";
  return `${actions === "" ? "" : `${actions} `}(quit its Pi to remove)`;
}

/** The narrowest a column of the list is cut to: its title, and at least this many characters. */
const MIN_COLUMN = 8;

/**
 * The list's columns never cut: the id and the actions are what a person copies into the next
 * command, and a cut start of an id is shared by every handoff made in the same minutes.
 */
const UNCUT_COLUMNS: ReadonlySet<string> = new Set(["ID", "ACTIONS"]);

/**
 * Column widths that fit `width` characters (two spaces between columns): the widest column that
 * `mayCut` (by its title) is narrowed, one character at a time, down to its title (and
 * `MIN_COLUMN`), until the table fits or no such column can give more; then the rows stay wider
 * than `width` (the terminal wraps them) rather than cut what may not be cut. A cut cell ends in `~`.
 */
export function fitColumns(
  natural: readonly number[],
  header: readonly string[],
  width: number,
  mayCut: (title: string) => boolean,
): number[] {
  const widths = [...natural];
  const total = (): number => widths.reduce((sum, w) => sum + w, 0) + 2 * (widths.length - 1);
  const floor = (column: number): number =>
    mayCut(header[column] ?? "")
      ? Math.min(natural[column] ?? 0, Math.max(MIN_COLUMN, header[column]?.length ?? 0))
      : (natural[column] ?? 0);
  while (total() > width) {
    let widest = -1;
    for (let column = 0; column < widths.length; column++) {
      if ((widths[column] ?? 0) > floor(column) && (widest === -1 || (widths[column] ?? 0) > (widths[widest] ?? 0)))
        widest = column;
    }
    if (widest === -1) break;
    widths[widest] = (widths[widest] ?? 0) - 1;
  }
  return widths;
}

/** One line for a picker (`/handoffs`); `now` measures the child's time in its state. */
export function formatPickerLabel(handoff: HandoffReport, now: number = Date.now()): string {
  const flags = handoff.flags.length > 0 ? ` [${handoff.flags.join(", ")}]` : "";
  const child = handoff.child === undefined ? "" : `, child ${describeChild(handoff, now)}`;
  return printable(`${handoff.branch}: ${describeStatus(handoff.status)}${child}${flags} (${handoff.id})`);
}

/** What `inspect` shows beyond the verdict: the task it was given and the child's last report. */
export interface InspectExtras {
  task?: string;
  lastReport?: Pick<ChildReport, "createdAt" | "text" | "done" | "left" | "commitsTotal">;
  /** Where the handoff spent its time (inventory/step-times.ts), when its manifest says. */
  stepTimes?: StepTimes;
  /** Why neither a removal nor a relaunch may act on the checkout now (remove/plan.ts `withoutBlockedActions`). */
  blocked?: string;
  /** How `pi-handoff` is typed in the user's shell, for the next steps (child/pi-command.ts; default `pi-handoff`). */
  cli?: string;
}

/** Lines of free text (a task, a report) under a label, terminal escapes and control characters removed. */
function textLines(label: string, text: string): string[] {
  const cleaned = sanitizeText(text).trim().split("\n");
  const pad = " ".repeat(17);
  return cleaned.map((line, index) => (index === 0 ? `  ${label.padEnd(15)}${line}` : `${pad}${line}`));
}

/** Everything `pi-handoff inspect` shows about one handoff. */
export function formatReport(handoff: HandoffReport, now: number = Date.now(), extras: InspectExtras = {}): string {
  const lines = [`Handoff ${handoff.id}`];
  lines.push(`  status:        ${describeStatus(handoff.status)} (manifest state ${handoff.state})`);
  if (handoff.status.code === "failed" || handoff.status.code === "unconfirmed")
    lines.push(`  error:         ${handoff.status.message}`);
  if (handoff.status.code === "orphaned_checkout") lines.push(`  why orphaned:  ${handoff.status.reason}`);
  if (handoff.status.code === "child_running") {
    for (const writer of handoff.status.writers)
      lines.push(`  live Pi:       pid ${writer.pid} (${writer.evidence.join(", ")})`);
  }
  if (handoff.child !== undefined)
    lines.push(`  child:         ${describeChild(handoff, now)} (${handoff.child.basis})`);
  if (extras.stepTimes !== undefined) lines.push(`  steps:         ${formatStepTimes(extras.stepTimes)}`);
  if (handoff.landing !== undefined) lines.push(`  landing:       ${describeLanding(handoff.landing)}`);
  if (extras.task !== undefined) lines.push(...textLines("task:", extras.task));
  const report = extras.lastReport;
  if (report !== undefined) {
    lines.push(
      `  last report:   sent ${report.createdAt} (${counted(report.commitsTotal, "commit")} on the branch then)`,
    );
    if (report.text.trim() !== "") lines.push(...textLines("", report.text));
    if (report.done !== undefined && report.done.trim() !== "") lines.push(...textLines("", `Done: ${report.done}`));
    if (report.left !== undefined && report.left.trim() !== "") lines.push(...textLines("", `Left: ${report.left}`));
  }
  if (handoff.rebase !== undefined) lines.push(`  rebase:        ${describeRebase(handoff)}`);
  lines.push(`  repository:    ${handoff.repo}`);
  lines.push(`  branch:        ${handoff.branch} ${describeBranch(handoff)}`);
  lines.push(`  base:          ${handoff.base.ref} at ${handoff.base.sha.slice(0, 12)}`);
  lines.push(`  worktree:      ${handoff.worktreePath} (${describeWorktree(handoff)})`);
  const unrecorded = (kind: "window" | "session") =>
    handoff.unrecorded?.includes(kind) === true ? ", made but never recorded: the handoff was killed first" : "";
  lines.push(
    `  window:        ${describeLocation(handoff.mux)} (${describeWorkspace(handoff)}${unrecorded("window")})`,
  );
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
    if (unmerged.commits.length < unmerged.total)
      lines.push(`  unmerged:      ... and ${unmerged.total - unmerged.commits.length} more`);
  }
  if (handoff.ports !== undefined) {
    if (handoff.portChecks === undefined) lines.push(`  ports:         ${handoff.ports.join(", ")}`);
    for (const check of handoff.portChecks ?? []) lines.push(`  port:          ${describePortCheck(check)}`);
  }
  if (handoff.flags.length > 0) lines.push(`  flags:         ${handoff.flags.join(", ")}`);
  for (const problem of handoff.problems) lines.push(`  could not check: ${problem}`);
  if (extras.blocked !== undefined) lines.push(`  blocked:       ${extras.blocked}`);
  const next = handoff.actions.map(
    (action) => `${extras.cli ?? "pi-handoff"} ${action === "prune" ? "prune" : `${action} ${handoff.id}`}`,
  );
  // What stops a removal is said where a removal would be offered.
  if (handoff.status.code === "child_running") next.push(`quit its Pi first to remove it`);
  lines.push(
    `  next:          ${next.length > 0 ? next.join(" | ") : extras.blocked !== undefined ? "nothing until that is done" : "nothing to do"}`,
  );
  return lines.map(printable).join("\n");
}

/** One reserved port as inspect found it: `20001 taken by someone else (pid 812 nginx): not this handoff's`. */
export function describePortCheck(check: PortCheck): string {
  switch (check.code) {
    case "free":
      return `${check.port} free`;
    case "in_use_by_handoff":
      return `${check.port} in use by this handoff (pid ${check.pids.join(", ")})`;
    case "taken":
      return `${check.port} TAKEN by someone else (${check.holders.length === 0 ? "a process of another user" : check.holders.map((holder) => `pid ${holder.pid} ${holder.name}`).join(", ")}): its servers cannot listen there; stop that process, or hand off again for new ports`;
    case "unknown":
      return `${check.port} could not be checked: ${stripPeriod(check.message)}`;
  }
}

/** `idle 3m`, `working 5s (bash)`, `exited 2m (code 0)`: the child's state, how long it has been in it, and what it said of it. */
export function describeChild(handoff: Pick<HandoffReport, "child">, now: number): string {
  const child = handoff.child;
  if (child === undefined) return "-";
  const since = child.since === undefined ? Number.NaN : Date.parse(child.since);
  const label = CHILD_STATE_LABELS[child.state];
  const timed = Number.isFinite(since) && Number.isFinite(now) ? `${label} ${formatDuration(now - since)}` : label;
  if (child.state === "exited" && child.exitCode !== undefined) return `${timed} (code ${child.exitCode})`;
  if (child.state === "working" && child.tool !== undefined) return `${timed} (${shortToolName(child.tool)})`;
  return timed;
}

/** A tool name as a status line shows it: one line, at most 24 characters. */
function shortToolName(name: string): string {
  const line = oneLine(name.replace(new RegExp(CONTROL_CHARACTERS.source, "g"), " "));
  return line.length > 24 ? `${line.slice(0, 23)}…` : line;
}

function describeLanding(landing: NonNullable<HandoffReport["landing"]>): string {
  const what = `${counted(landing.commits, "commit")} into ${landing.into} by ${landing.strategy}, ${landing.from.slice(0, 12)} -> ${landing.to.slice(0, 12)}`;
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

function describeRebase(handoff: HandoffReport): string {
  const rebase = handoff.rebase;
  if (rebase === undefined) return "";
  const what = `${counted(rebase.commits, "commit")} onto ${rebase.onto.ref} at ${rebase.onto.sha.slice(0, 12)}, ${rebase.from.slice(0, 12)} -> ${rebase.to.slice(0, 12)}`;
  switch (rebase.verdict) {
    case "rebased":
      return `rebased ${what}`;
    case "rebased_unrecorded":
      return `interrupted after the branch moved: ${handoff.branch} is at the new tip ${rebase.to.slice(0, 12)} (rebased; pi-handoff rebase ${handoff.id} records it)`;
    case "not_rebased":
      return `interrupted before the branch moved: ${handoff.branch} is still at the old tip ${rebase.from.slice(0, 12)} (nothing rebased; run pi-handoff rebase again)`;
    case "abandoned":
      return `abandoned (${what}); nothing rebased`;
    case "undone":
      return `undone (${what}): pi-handoff land --all sent it back and moved ${handoff.branch} back to ${rebase.from.slice(0, 12)}`;
    case "undone_unrecorded":
      return `interrupted while pi-handoff land --all sent it back: ${handoff.branch} is back at ${rebase.from.slice(0, 12)} (undone; the next pi-handoff land --all records it)`;
    case "not_undone":
      return `interrupted while pi-handoff land --all sent it back: ${handoff.branch} is still at the rebased tip ${rebase.to.slice(0, 12)} (the next pi-handoff land --all moves it back)`;
    case "unknown":
      return `interrupted (${what}); ${handoff.branch} is now at ${rebase.branchAt?.slice(0, 12) ?? "no commit"}, neither the old nor the new tip: it moved since`;
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
      const parts = [`${counted(state.aheadOfBase, "commit")} since the base`];
      parts.push(
        state.merged !== undefined
          ? `merged into ${state.mergeTarget.ref}: ${MERGE_RULE_WORDS[state.merged.rule]}`
          : state.unmerged.total > 0
            ? `${state.unmerged.total} not merged into ${state.mergeTarget.ref}`
            : `all in ${state.mergeTarget.ref}`,
      );
      if ((state.behind ?? 0) > 0)
        parts.push(`${state.mergeTarget.ref} has moved ${counted(state.behind ?? 0, "commit")} past it`);
      if (state.unpushed.total > 0) parts.push(`${state.unpushed.total} not pushed`);
      return `(${parts.join("; ")})`;
    }
  }
}

/** Which rule found the branch merged, as `inspect` says it. */
const MERGE_RULE_WORDS: Readonly<Record<MergedFact["rule"], string>> = {
  ancestry: "its commits are there",
  landing: "landed by pi-handoff land, and still there",
  patch: "every commit's patch is there (rebased)",
  tree: "merging it would change nothing (squashed)",
};

function describeWorktree(handoff: HandoffReport): string {
  switch (handoff.worktree.code) {
    case "present":
      return "present";
    case "missing":
      return "missing";
    case "prunable":
      return "missing; git still lists it";
    case "claimed":
      return "never checked out: an empty directory the handoff claimed";
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
      const session =
        agent.sessionFile === undefined
          ? ""
          : agent.sessionFile === handoff.childSessionFile
            ? " on the child session"
            : ` on ${agent.sessionFile}`;
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

/**
 * The parent's widget: one line per own handoff (`handoff feat/x  idle 2m`), at most a few, those
 * that need the person and changed last (widget-rows.ts chooses), and a line that sums up the rest.
 */
export function formatChildrenWidget(
  handoffs: readonly {
    id: string;
    branch: string;
    status: { state: ChildState; since?: string; tool?: string; exitCode?: number };
    /** The forecast's mark (`behind 3, conflicts 2`), shown after the state. */
    forecast?: string;
  }[],
  now: number,
): string[] {
  const { shown, more } = chooseWidgetRows(handoffs, now);
  const width = Math.max(...shown.map((handoff) => handoff.branch.length));
  const lines = shown.map((handoff) =>
    printable(
      `handoff ${handoff.branch.padEnd(width)}  ${describeChild({ child: { ...handoff.status, basis: "" } }, now)}${handoff.forecast === undefined ? "" : `  (${handoff.forecast})`}`,
    ),
  );
  if (more > 0) lines.push(`handoffs: ${more} more (/handoffs lists them)`);
  return lines;
}
