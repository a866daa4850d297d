/**
 * What `/handoffs` offers and asks, in words (pi-extension/handoffs-command.ts only shows them):
 * a handoff's menu, with a line that says why removal is not offered when it is not, and every
 * question before something is changed (remove, delete the branch too, land, the landing's
 * strategy, rebase, prune).
 *
 * Invariants:
 * - A reflexive Enter or Escape never changes anything. Pi selects a dialog's first option and
 *   its own yes/no dialog (`ui.confirm`) starts on "Yes", so it is never used here: each question
 *   is a choice whose first option keeps things, and Escape answers nothing.
 * - Where `pi-handoff remove` would need --force (work lost for good, or facts that could not be
 *   checked), the only answer that goes on is the handoff's branch name typed out; anything else
 *   keeps everything.
 * - Pure: reports and plans in, words out.
 */
import type { HandoffReport } from "../inventory/report-schema.ts";
import { isInProgress } from "../inventory/classify.ts";

/** A question before a change: `choose` offers keep first; `type_name` goes on only on the exact name. */
export type ChangeQuestion =
  | { code: "choose"; title: string; keep: string; proceed: string }
  | { code: "type_name"; title: string; name: string };

/** The options of a `choose` question, the one that keeps things first. */
export function questionOptions(question: Extract<ChangeQuestion, { code: "choose" }>): string[] {
  return [question.keep, question.proceed];
}

/** Whether the answer (the option chosen or the text typed; undefined: Escape) says go on. */
export function answerProceeds(question: ChangeQuestion, answer: string | undefined): boolean {
  if (answer === undefined) return false;
  return question.code === "choose" ? answer === question.proceed : answer.trim() === question.name;
}

/** What to tell a person who typed something other than the name (nothing for Enter alone or Escape). */
export function mistypedName(question: ChangeQuestion, answer: string | undefined): string | undefined {
  if (question.code !== "type_name" || answer === undefined || answer.trim() === "") return undefined;
  if (answer.trim() === question.name) return undefined;
  return `${JSON.stringify(answer.trim())} is not ${question.name}; nothing was changed.`;
}

/**
 * The removal's question: the plan's lines (remove/words.ts `describeRemovalPlan`), then either a
 * choice, or, when the removal needs what --force allows, the branch name to type.
 */
export function removalQuestion(branch: string, planLines: readonly string[], needsForce: boolean): ChangeQuestion {
  const title = `Remove handoff ${branch}?\n${planLines.join("\n")}`;
  if (!needsForce) return { code: "choose", title, keep: "No, keep it", proceed: "Yes, remove it" };
  return {
    code: "type_name",
    title: `${title}\nThat is more than a removal does without --force. To remove it anyway, type ${branch} and press Enter; Enter alone or Escape keeps everything.`,
    name: branch,
  };
}

/** Deleting the branch as well (remove/plan.ts `branchDeletionOffer`: offered only when that loses nothing). */
export function branchDeletionQuestion(offer: { question: string; detail: string }): ChangeQuestion {
  return {
    code: "choose",
    title: `${offer.question}\n${offer.detail}`,
    keep: "No, keep the branch",
    proceed: "Yes, delete the branch",
  };
}

/** Landing, after its plan was shown (land.ts `describeLandPlan`). */
export function landQuestion(branch: string, into: string, planLines: readonly string[]): ChangeQuestion {
  return {
    code: "choose",
    title: `Land ${branch} into ${into}?\n${planLines.join("\n")}`,
    keep: "No, do not land it",
    proceed: "Yes, land it",
  };
}

/** Rebasing, after its plan was shown (rebase.ts `describeRebasePlan`). */
export function rebaseQuestion(branch: string, onto: string, planLines: readonly string[]): ChangeQuestion {
  return {
    code: "choose",
    title: `Rebase ${branch} onto ${onto}?\n${planLines.join("\n")}`,
    keep: "No, leave it as it is",
    proceed: "Yes, rebase it",
  };
}

/** Pruning, typed in the TUI (`/handoffs prune [--merged]`), after what it would do was listed (remove/words.ts `describePruneAction`). */
export function pruneQuestion(actionLines: readonly string[]): ChangeQuestion {
  return {
    code: "choose",
    title: `Prune these?\n${actionLines.join("\n")}`,
    keep: "No, prune nothing",
    proceed: "Yes, prune them",
  };
}

/** The first option of the landing's strategy question: land nothing. */
export const LAND_NOTHING = "Cancel: land nothing";

/** The landing's strategy question when a fast-forward is not possible: cancel first, then the strategies. */
export function strategyQuestion<Strategy extends string>(
  refusal: string,
  strategies: readonly Strategy[],
): { title: string; options: string[] } {
  return { title: `${refusal}\nLand how?`, options: [LAND_NOTHING, ...strategies] };
}

export type MenuChoice = "relaunch" | "focus" | "inspect" | "land" | "rebase" | "remove";

export const MENU_LABELS: Readonly<Record<MenuChoice, string>> = {
  relaunch: "Relaunch its Pi",
  focus: "Switch to its window",
  inspect: "Inspect",
  land: "Land its commits",
  rebase: "Rebase it onto its target's new tip",
  remove: "Remove it",
};

/**
 * A handoff's menu: what it offers now (`canLand`/`canRebase`: land.ts and rebase.ts say), in a
 * fixed order, and in its title the line that says why removal is not offered, when it is not.
 */
export function handoffMenu(
  handoff: HandoffReport,
  offers: { canLand: boolean; canRebase: boolean },
): { title: string; choices: MenuChoice[] } {
  const choices: MenuChoice[] = [];
  if (handoff.actions.includes("relaunch")) choices.push("relaunch");
  if (handoff.actions.includes("focus")) choices.push("focus");
  choices.push("inspect");
  if (offers.canLand) choices.push("land");
  if (offers.canRebase) choices.push("rebase");
  if (handoff.actions.includes("remove")) choices.push("remove");
  const why = choices.includes("remove") ? undefined : whyNotRemovable(handoff);
  return { title: `${handoff.branch} (${handoff.id})${why === undefined ? "" : `\n${why}`}`, choices };
}

/** Why `remove` is not offered (classify.ts leaves it out of the actions), in one line. */
export function whyNotRemovable(handoff: HandoffReport): string {
  const { status } = handoff;
  if (status.code === "child_running")
    return `Remove: not while its Pi runs (pid ${status.writers.map((writer) => writer.pid).join(", ")}); quit it first.`;
  if (isInProgress(handoff)) return "Remove: not while it is being set up; try again once that has finished.";
  if (status.code === "removed") return "Remove: it was removed already.";
  return "Remove: not now; Inspect says why.";
}
