/**
 * The words of a landing: the plan said in plain lines, the request read from the command words,
 * and whether `/handoffs` offers it. Reads and renders only.
 *
 * Invariants: every line that shows a subject or a path goes through `printable` (a name with
 * terminal escapes or line breaks must not hide or fake a line); a new commit's id is shown only
 * when that very commit is the one that lands.
 */
import { LAND_STRATEGIES, type LandStrategy } from "../manifest/schema.ts";
import { counted, hasControlCharacter, oneLine, printable } from "../text.ts";
import type { LandPlan, LandRequest } from "./land-plan.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";

/** Whether `/handoffs` offers landing: the branch has commits its merge target lacks and no Pi is in a turn. */
export function canOfferLand(report: HandoffReport): boolean {
  return report.actions.includes("land");
}

/**
 * Plain lines saying exactly what the landing does. A commit the landing makes is named by its id
 * only when that is the one that will land (`made`: the plan is carried out with the very objects
 * it made, as after a confirmation); otherwise its id depends on when it is made, and is not shown.
 */
export function describeLandPlan(plan: LandPlan, options: { made?: boolean } = {}): string[] {
  const made = options.made === true || plan.created === 0;
  const result = made ? plan.to.slice(0, 12) : "a new commit";
  const named = (what: string): string => (made ? `${what} ${plan.to.slice(0, 12)}` : what);
  const how: Record<LandStrategy, string> = {
    ff: `fast-forward ${plan.into} to ${plan.to.slice(0, 12)}`,
    rebase:
      plan.created === 0
        ? `fast-forward ${plan.into} to ${plan.to.slice(0, 12)} (already based on it)`
        : `rebase ${counted(plan.created, "commit")} onto ${plan.into}, which then points at ${made ? plan.to.slice(0, 12) : "the last of them"}`,
    merge: `create ${named("a merge commit")} on ${plan.into}`,
    squash: `create ${named("one squashed commit")} on ${plan.into}${plan.message === undefined ? "" : `, subject ${JSON.stringify(plan.message)}`}`,
  };
  const lines = [
    `Land ${counted(plan.commits.length, "commit")} of ${plan.branch} into ${plan.into} (${plan.from.slice(0, 12)} -> ${result}): ${how[plan.strategy]}.`,
  ];
  if (!made) lines.push("  (a new commit's id is known once it is made: it holds the time it is made at)");
  for (const commit of plan.commits) lines.push(`  ${commit.sha.slice(0, 12)} ${commit.subject}`);
  lines.push(
    plan.checkout === undefined
      ? `${plan.into} is not checked out anywhere: only the branch moves.`
      : `${plan.into} is checked out in ${plan.checkout}: ${counted(plan.touched.length, "file")} there ${plan.touched.length === 1 ? "is" : "are"} updated (git merge --ff-only).`,
  );
  if (plan.strategy === "rebase" || plan.strategy === "squash")
    lines.push(`Branch ${plan.branch} keeps its own commits.`);
  // A subject or path with terminal escapes or line breaks must not hide or fake a line of the plan.
  return lines.map(printable);
}

export function listed(paths: readonly string[]): string {
  const shown = paths.slice(0, 10).map(printable).join(", ");
  return paths.length > 10 ? `${shown} and ${paths.length - 10} more` : shown;
}

/** The words of a land command, as the command line parses them (src/cli/command-line.ts). */
export interface LandWords {
  flags: Readonly<Record<string, boolean>>;
  into?: string;
  strategy?: string;
  message?: string;
}

/** The land request from the parsed command words (shared by `pi-handoff land` and `/handoffs land`). */
export function landRequestFrom(
  parsed: LandWords,
): { ok: true; request: LandRequest } | { ok: false; message: string } {
  const strategy = LAND_STRATEGIES.find((known) => known === parsed.strategy);
  if (parsed.strategy !== undefined && strategy === undefined) {
    return {
      ok: false,
      message: `--strategy must be one of ${LAND_STRATEGIES.join(", ")}, not ${JSON.stringify(parsed.strategy)}.`,
    };
  }
  if (parsed.into !== undefined && (parsed.into.length === 0 || parsed.into.startsWith("-")))
    return { ok: false, message: "--into needs a branch name." };
  const message = parsed.message === undefined ? undefined : oneLine(parsed.message);
  if (message !== undefined && (message.length === 0 || hasControlCharacter(message)))
    return { ok: false, message: "--message needs a subject: one line of text." };
  // The branch is checked out in the handoff's worktree until that is removed: alone, it could never apply.
  if (parsed.flags["delete-branch"] === true && parsed.flags.remove !== true)
    return {
      ok: false,
      message:
        "--delete-branch works only with --remove: the branch is checked out in the handoff's worktree until that is removed.",
    };
  return {
    ok: true,
    request: {
      ...(parsed.into === undefined ? {} : { into: parsed.into }),
      ...(strategy === undefined ? {} : { strategy }),
      dryRun: parsed.flags["dry-run"] === true,
      remove: parsed.flags.remove === true,
      deleteBranch: parsed.flags["delete-branch"] === true,
      ...(parsed.flags["no-verify"] === true ? { noVerify: true } : {}),
      ...(message === undefined ? {} : { message }),
    },
  };
}
