/**
 * The words of `npm run bench`'s sections in docs/performance.md (scripts/bench.ts runs them):
 * each section's figures in, its lines out. Pure: no measuring, no file written here.
 */
import type { ChildStatusBenchResult } from "./child-status.ts";
import type { LandQueueBenchResult } from "./land-queue.ts";

export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number;
}

export function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return { median, min: sorted[0] ?? 0, max: sorted.at(-1) ?? 0, runs: values.length };
}

export function ratio(a: number, b: number): number {
  return b === 0 ? Number.NaN : Math.round((a / b) * 100) / 100;
}

/** (g): the two backends' medians side by side, their ratio, and what the Herdr server itself costs. */
export function formatHerdrVsTmux(raw: unknown): string[] {
  const r = raw as
    | { herdrVersion: string; herdrMs: number[]; tmuxMs: number[]; herdrCallMs: number[]; herdrServerRssMB: number }
    | { skipped: string }
    | undefined;
  if (r === undefined || "skipped" in r) return [`Not measured: ${r?.skipped ?? "not run"}.`];
  const herdr = spread(r.herdrMs);
  const tmux = spread(r.tmuxMs);
  const call = spread(r.herdrCallMs);
  const cell = (s: Spread) => `${s.median.toFixed(0)} (${s.min.toFixed(0)}-${s.max.toFixed(0)})`;
  return [
    `The same transaction (manifest, worktree, window, fork, launch, acknowledgement) on ${r.herdrVersion} and on tmux, alternating, ${herdr.runs} run(s) each.`,
    "",
    "| | wall ms |",
    "|---|---|",
    `| on the real Herdr (\`herdr worktree create\`, the launcher typed into its pane) | ${cell(herdr)} |`,
    `| on tmux (git worktree add, a window running the launcher) | ${cell(tmux)} |`,
    `| ratio Herdr / tmux | ${ratio(herdr.median, tmux.median)} |`,
    `| the Herdr server's own cost: one CLI round trip (\`herdr workspace list\`, a new client process) | ${cell(call)} |`,
    `| the Herdr server's resident memory after the runs, MB | ${r.herdrServerRssMB} |`,
  ];
}

/** (j): `relaunch --all` after a reboot against the same handoffs relaunched one by one. */
export function formatRebootRestore(raw: unknown): string[] {
  const r = raw as { handoffs: number; allMs: number[]; oneByOneMs: number[] } | { skipped: string } | undefined;
  if (r === undefined || "skipped" in r) return [`Not measured: ${r?.skipped ?? "not run"}.`];
  const all = spread(r.allMs);
  const one = spread(r.oneByOneMs);
  const cell = (s: Spread) => `${s.median.toFixed(0)} (${s.min.toFixed(0)}-${s.max.toFixed(0)})`;
  return [
    `${r.handoffs} handoffs run real child Pi in a private tmux server; every Pi is killed, then the server, and tmux is`,
    "started again on the same socket. Timed from the command to the last child confirmed (the real CLI, each after its",
    `own "reboot", alternating), ${all.runs} run(s) each. Goal: well under the one-by-one time (3 at a time).`,
    "",
    "| | wall ms |",
    "|---|---|",
    `| \`pi-handoff relaunch --all\` | ${cell(all)} |`,
    `| ${r.handoffs} \`pi-handoff relaunch <id> --no-focus\`, one after another | ${cell(one)} |`,
    `| ratio all / one by one | ${ratio(all.median, one.median)} |`,
  ];
}

type TuiSides = {
  oursConfirmedMs: number[];
  oursScreenMs: number[];
  piWorktreeScreenMs: number[];
  failedRounds?: string[];
};
type TuiFigures =
  | { piWorktree: string; small: TuiSides; large: TuiSides & { sessionBytes: number } }
  | { skipped: string }
  | undefined;

/** Ours confirmed over pi-worktree's screen, medians: the figure (k)'s goals are about. */
function confirmedToScreen(sides: TuiSides): number | undefined {
  // A side whose every round failed has no figure: no ratio, rather than 0 read as a goal met.
  if (sides.oursConfirmedMs.length === 0 || sides.piWorktreeScreenMs.length === 0) return undefined;
  return ratio(spread(sides.oursConfirmedMs).median, spread(sides.piWorktreeScreenMs).median);
}

export function tuiRatios(raw: unknown): { small: number | undefined; large: number | undefined } | undefined {
  const r = raw as TuiFigures;
  if (r === undefined || "skipped" in r) return undefined;
  return { small: confirmedToScreen(r.small), large: confirmedToScreen(r.large) };
}

/** (k): typed into the TUI, ours against pi-worktree, each figure beside its goal. */
export function formatTuiVsPiWorktree(raw: unknown): string[] {
  const r = raw as TuiFigures;
  if (r === undefined || "skipped" in r) return [`Not measured: ${r?.skipped ?? "not run"}.`];
  const cell = (values: number[]) => {
    if (values.length === 0) return "none finished";
    const s = spread(values);
    return `${s.median.toFixed(0)} (${s.min.toFixed(0)}-${s.max.toFixed(0)})`;
  };
  const rows = (label: string, sides: TuiSides, goal: string) => [
    `| ${label}: ours, Enter to the child confirmed | ${cell(sides.oursConfirmedMs)} | |`,
    `| ${label}: ours, Enter to the child's screen drawn | ${cell(sides.oursScreenMs)} | |`,
    `| ${label}: ${r.piWorktree}, Enter to the new Pi's screen drawn | ${cell(sides.piWorktreeScreenMs)} | |`,
    `| ${label}: ratio ours confirmed / pi-worktree's screen | ${confirmedToScreen(sides) ?? "none"} | ${goal} |`,
  ];
  return [
    `Each round starts a parent Pi TUI in a new window of one private tmux server and types the command there; ${spread(r.small.oursConfirmedMs).runs} round(s) on the small conversation, ${spread(r.large.oursConfirmedMs).runs} on the ${(r.large.sessionBytes / 1e6).toFixed(0)} MB one, the two tools alternating. Timed from the Enter that submits the command.`,
    "",
    "| | wall ms | goal |",
    "|---|---|---|",
    ...rows("small conversation", r.small, "<= 0.9"),
    ...rows(`${(r.large.sessionBytes / 1e6).toFixed(0)} MB conversation`, r.large, "<= 0.3"),
    ...failedRoundLines([...(r.small.failedRounds ?? []), ...(r.large.failedRounds ?? [])]),
  ];
}

/**
 * A section measured again on its own after the full run (its function called with the same
 * arguments, spliced into results.json, then `--render-only`): when, and under what load.
 */
interface MeasuredAlone {
  date: string;
  loadAverage: string;
  why: string;
}

export function measuredAloneLine(raw: unknown): string[] {
  const alone = (raw as { measuredAlone?: MeasuredAlone } | undefined)?.measuredAlone;
  if (alone === undefined) return [];
  return [
    `Measured on its own on ${alone.date.slice(0, 10)} (${alone.why}), with the machine's load average at ${alone.loadAverage} on its 2 cores: the figures are that machine's at that time.`,
    "",
  ];
}

export function treeWarmMedian(raw: unknown): number | undefined {
  const ms = (raw as { cliWarmMs?: number[] } | undefined)?.cliWarmMs;
  return ms === undefined || ms.length === 0 ? undefined : spread(ms).median;
}

/** (l): the tree as a user runs it, cold and warm, and the usage reading alone. */
export function formatTreeUsage(raw: unknown): string[] {
  const r = raw as
    | {
        sessions: number;
        sessionBytes: number;
        grown: number;
        cliColdMs: number[];
        cliWarmMs: number[];
        cliGrownMs: number[];
        usageColdMs: number[];
        usageWarmMs: number[];
      }
    | { skipped: string }
    | undefined;
  if (r === undefined || "skipped" in r) return [`Not measured: ${r?.skipped ?? "not run"}.`];
  const cell = (values: number[]) => {
    const s = spread(values);
    return `${s.median.toFixed(0)} (${s.min.toFixed(0)}-${s.max.toFixed(0)})`;
  };
  const warm = spread(r.cliWarmMs).median;
  return [
    `${r.sessions} sessions of ${(r.sessionBytes / 1e6).toFixed(1)} MB (${((r.sessions * r.sessionBytes) / 1e9).toFixed(2)} GB) in a tree of handoffs, ${spread(r.cliColdMs).runs} run(s). The CLI as a user runs it (a new process: manifests, the inventory of every handoff, every session's usage). Cold: no usage cache (the files' pages are in memory: just written). Goal: warm under 1 s (${verdict(warm, (v) => v < 1000, " ms")}).`,
    "",
    "| | wall ms |",
    "|---|---|",
    `| \`pi-handoff tree --json\`, cold (every session read) | ${cell(r.cliColdMs)} |`,
    `| \`pi-handoff tree --json\`, warm (one stat per session) | ${cell(r.cliWarmMs)} |`,
    `| \`pi-handoff tree --json\`, after ${r.grown} sessions grew by an entry (read from their last offset) | ${cell(r.cliGrownMs)} |`,
    `| the usage of the ${r.sessions} sessions alone, in process, cold | ${cell(r.usageColdMs)} |`,
    `| the same, warm (the cache in memory) | ${cell(r.usageWarmMs)} |`,
  ];
}

/** The rounds left out of (k)'s figures, said under its table. */
function failedRoundLines(failed: string[]): string[] {
  if (failed.length === 0) return [];
  return ["", `Left out, ${failed.length} round(s) that did not finish:`, ...failed.map((line) => `- ${line}`)];
}

/** (f): the refresh against its baseline (children read from their session tails), and the change-to-widget delay. */
export function childStatusSection(figures: unknown): string[] {
  const f = figures as Partial<ChildStatusBenchResult> | undefined;
  if (f?.changeToWidget === undefined || f.ms === undefined) {
    return ["```json", JSON.stringify(figures ?? { skipped: "not measured" }, null, 2), "```"];
  }
  const cell = (values: number[] | undefined): string => {
    const s = spread(values ?? []);
    return `${s.median.toFixed(1)} (${s.min.toFixed(1)}-${s.max.toFixed(1)})`;
  };
  const stall = (values: number[] | undefined): string => spread(values ?? []).max.toFixed(1);
  const w = f.changeToWidget;
  return [
    "A refresh (the poll, `PI_HANDOFF_WATCH_POLL_MS`) of children that publish their state reads each one's state file",
    "and lease, never its session; the baseline is the same children publishing nothing (older versions), read from",
    "their session tails as every child was before. Cold: the watch's first refresh; warm: every later one, nothing changed.",
    "Goal: no event-loop stall over 50 ms, and no more work per refresh than the baseline.",
    "",
    "| refresh of 50 children | wall ms | longest stall ms |",
    "|---|---|---|",
    `| publishing, cold | ${cell(f.ms)} | ${stall(f.maxEventLoopDelayMs)} |`,
    `| publishing, warm | ${cell(f.ownWarmMs)} | ${stall(f.ownWarmMaxEventLoopDelayMs)} |`,
    `| baseline (session tails), cold | ${cell(f.legacyMs)} | ${stall(f.legacyMaxEventLoopDelayMs)} |`,
    `| baseline (session tails), warm | ${cell(f.warmMs)} | ${stall(f.warmMaxEventLoopDelayMs)} |`,
    `| ratio publishing / baseline, warm (goal <= 1) | ${f.ratioToLegacyWarm} | |`,
    `| ratio publishing / baseline, cold | ${f.ratioToLegacyCold} | |`,
    "",
    `The change-to-widget delay over a scripted run: a child process publishing for ${f.handoffs} leased sessions makes`,
    `${w.changes} changes, one every ${w.spacingMs} ms round-robin; the parent's watch (directory events, no poll) shows them.`,
    "From the child's file in place to the watch's update of what the widget draws:",
    "",
    "| changes shown | median ms | 95th percentile ms | worst ms | longest stall ms (whole run) |",
    "|---|---|---|---|---|",
    `| ${w.shown} of ${w.changes} | ${w.medianMs} | ${w.p95Ms} | ${w.worstMs} | ${w.maxEventLoopDelayMs} |`,
  ];
}

/** (e) against its goal: the median of the runs beside 0.5 s. */
/** "met in this run (value)" or "not met in this run (value)", for a reading that names the run's figure. */
export function verdict(value: number | undefined, holds: (value: number) => boolean, unit = ""): string {
  if (value === undefined) return "not measured in this run";
  const shown = unit === "" ? String(value) : `${value.toFixed(0)}${unit}`;
  return `${holds(value) ? "met" : "not met"} in this run (${shown})`;
}

export function listMedian(raw: unknown): number | undefined {
  const ms = (raw as { ms?: number[] } | undefined)?.ms;
  return ms === undefined || ms.length === 0 ? undefined : spread(ms).median;
}

export function listGoalLine(raw: unknown): string[] {
  const ms = (raw as { ms?: number[] } | undefined)?.ms;
  if (ms === undefined || ms.length === 0) return [];
  const s = spread(ms);
  return [
    `Goal: under 500 ms on this machine. Measured: ${s.median.toFixed(0)} ms median (${s.min.toFixed(0)}-${s.max.toFixed(0)}), ${s.runs} runs.`,
    "",
  ];
}

/** (m): the merge queue against the same landings by hand (scripts/bench/land-queue.ts). */
export function formatLandQueue(raw: unknown): string[] {
  const r = raw as LandQueueBenchResult | { skipped: string } | undefined;
  if (r === undefined || "skipped" in r) return [`Not measured: ${r?.skipped ?? "not run"}.`];
  const cell = (values: number[]) => {
    const s = spread(values);
    return `${s.median.toFixed(0)} (${s.min.toFixed(0)}-${s.max.toFixed(0)})`;
  };
  return [
    `${r.handoffs} children of one repository, each with a commit of its own (none conflicts), the check \`true\`, ${spread(r.queueMs).runs} run(s). The queue: one \`pi-handoff land --all\`. By hand: per child \`pi-handoff forecast\`, the check, \`pi-handoff land <id>\` (by rebase once main moved on). Goal: the queue no slower than by hand (ratio at most 1): ${verdict(r.ratio, (v) => v <= 1)}.`,
    "",
    "| | wall ms |",
    "|---|---|",
    `| \`pi-handoff land --all\` | ${cell(r.queueMs)} |`,
    `| by hand: ${r.commands.byHand} commands | ${cell(r.byHandMs)} |`,
    `| the ${r.handoffs} checks alone | ${cell(r.checksMs)} |`,
    `| ratio queue / by hand | ${r.ratio} |`,
    `| the queue's time beyond its checks, per child | ${r.overheadPerChildMs} |`,
    "",
    `Landed without a person: ${r.landedWithoutPerson.queue} of ${r.handoffs} by the queue (${r.commands.queue} command), ${r.landedWithoutPerson.byHand} by hand (forecast, the check and land for each).`,
  ];
}
