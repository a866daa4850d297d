/**
 * `/handoffs`: the recovery inventory inside Pi. Alone: pick a handoff, then relaunch its Pi,
 * switch to its window, inspect it, land its commits, rebase it onto its target's new tip, or remove it (after a question that lists
 * what would be lost); in print mode (no UI) the list goes to stderr. With words (`/handoffs remove
 * feat/x`): the `pi-handoff` command of the same words, run here, except that a removal with a UI is
 * asked in a dialog instead of needing --force, a prune with a UI lists what it would do and asks
 * first, and a landing with a UI asks for a strategy when a fast-forward is not possible.
 *
 * Invariants: decisions and words live in src/inventory/, the verbs' rooms and src/cli/ (shared with the `pi-handoff` CLI; the
 * menu and the questions in handoffs-questions.ts); this file only asks. Every question before a
 * change is a choice whose first option keeps things, or the branch name to type where work would
 * be lost for good: a reflexive Enter or Escape changes nothing. Pi's `ui.confirm` (which starts on
 * "Yes") is not used.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { unsupportedPlatform } from "../src/process/platform.ts";
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { currentPiCommand } from "../src/child/launch-command.ts";
import { launchNoticeLevel } from "../src/child/launcher.ts";
import { ManifestStore } from "../src/manifest/store.ts";
import { agentDirFromEnv } from "../src/session/paths.ts";
import { splitCommandLine } from "../src/command-line-words.ts";
import { main } from "../src/cli/cli.ts";
import { USAGE } from "../src/cli/usage.ts";
import { carryOutPrune } from "../src/cli/verbs/remove.ts";
import { parseRecoveryCommand } from "../src/cli/command-line.ts";
import { launchTimeoutsFromEnv } from "../src/child/timeouts.ts";
import {
  createLandDeps,
  createRebaseDeps,
  createRecoveryDeps,
  recoveryEnvProblem,
  type RecoveryDeps,
} from "../src/cli/deps.ts";
import { completeRecoveryArgs, type RecoveryCompletion } from "../src/cli/completions.ts";
import { focusHandoff } from "../src/relaunch/focus.ts";
import { formatInventory, formatPickerLabel } from "../src/inventory/format.ts";
import { buildInventory } from "../src/inventory/inventory.ts";
import type { HandoffReport } from "../src/inventory/report-schema.ts";
import { relaunchHandoff } from "../src/relaunch/relaunch.ts";
import { landHandoff, removalFailedAfterLanding, type LandDeps, type LandRequest } from "../src/land/land.ts";
import { canOfferLand, describeLandPlan, landRequestFrom } from "../src/land/land-words.ts";
import { branchDeletionOffer, losesNoMoreThan, planRemoval } from "../src/remove/plan.ts";
import { planPrune } from "../src/remove/prune.ts";
import { removeHandoff } from "../src/remove/remove.ts";
import { describePruneAction, describeRemovalPlan } from "../src/remove/words.ts";
import { resolveHandoffName } from "../src/inventory/resolve.ts";
import {
  answerProceeds,
  branchDeletionQuestion,
  handoffMenu,
  landQuestion,
  MENU_LABELS,
  mistypedName,
  pruneQuestion,
  questionOptions,
  rebaseQuestion,
  removalQuestion,
  strategyQuestion,
  type ChangeQuestion,
  type MenuChoice,
} from "../src/cli/handoffs-questions.ts";
import { canOfferRebase, rebaseHandoff, type RebaseDeps } from "../src/rebase/rebase.ts";
import { describeRebasePlan } from "../src/rebase/words.ts";
import { report } from "./report.ts";

const STATUS_KEY = "handoffs";

/** What tests replace; Pi's own run uses the defaults. */
export interface HandoffsCommandOptions {
  deps?: RecoveryDeps;
  /** How to start Pi on a relaunch (default: this very Pi). */
  piCommand?: readonly string[];
  /** Where print mode writes the list (default: stderr). */
  writeStderr?: (text: string) => void;
  landDeps?: LandDeps;
  rebaseDeps?: RebaseDeps;
}

/** Commands, then handoffs by branch or id, from this agent dir's manifests. */
export function handoffsCompletions(
  prefix: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RecoveryCompletion[] | null> {
  return completeRecoveryArgs(prefix, ManifestStore.forAgentDir(agentDirFromEnv(env)));
}

const HELP = `Usage: /handoffs [<command> [<handoff>] [options]]
Alone, /handoffs lists your handoffs to pick one (in print mode it prints the list).
With a command, it does what pi-handoff does, here:

`;

export async function runHandoffs(
  args: string,
  ctx: ExtensionCommandContext,
  options: HandoffsCommandOptions = {},
): Promise<void> {
  const refusal = unsupportedPlatform();
  if (refusal !== undefined) return report(ctx, refusal, "error");
  const split = splitCommandLine(args);
  if (!split.ok) return report(ctx, `/handoffs: ${split.message}`, "error");
  const words = split.words.map((word) => word.text);
  if (split.rest !== undefined)
    return report(ctx, `/handoffs: Unexpected ${JSON.stringify(`-- ${split.rest}`)} (see /handoffs --help).`, "error");
  // The help answers whatever the settings hold, as pi-handoff --help does.
  if (words.includes("--help") || words.includes("-h") || words[0] === "help")
    return report(ctx, `${HELP}${USAGE.replace(/^Usage: .*\n\n/, "")}`, "info");
  const problem = options.deps === undefined ? recoveryEnvProblem(process.env) : undefined;
  if (problem !== undefined) return report(ctx, `/handoffs: ${problem}`, "error");
  const deps = options.deps ?? createRecoveryDeps(process.env);
  const piCommand = options.piCommand ?? currentPiCommand();
  if (words.length === 0) return pick(deps, ctx, piCommand, options);
  const parsed = parseRecoveryCommand(words, "/handoffs --help");
  // With a person to ask, a landing that cannot fast-forward asks how instead of refusing.
  // The queue (`land --all`, several handoffs) asks nothing: it runs as pi-handoff's, below.
  const queue = parsed.ok && (parsed.parsed.flags.all === true || parsed.parsed.handoffs !== undefined);
  if (parsed.ok && parsed.parsed.command === "land" && ctx.hasUI && !queue) {
    const resolved = await resolveHandoffName(deps.store, parsed.parsed.handoff ?? "");
    if (!resolved.ok) return report(ctx, `/handoffs land: ${resolved.message}`, "error");
    const request = landRequestFrom(parsed.parsed);
    if (!request.ok) return report(ctx, `/handoffs land: ${request.message}`, "error");
    return land(resolved.id, request.request, ctx, options.landDeps ?? createLandDeps(process.env), { confirm: false });
  }
  // With a person to ask, a removal is confirmed in a dialog that lists what would be lost.
  if (parsed.ok && parsed.parsed.command === "remove" && ctx.hasUI && parsed.parsed.flags["dry-run"] !== true) {
    const resolved = await resolveHandoffName(deps.store, parsed.parsed.handoff ?? "");
    if (!resolved.ok) return report(ctx, `/handoffs remove: ${resolved.message}`, "error");
    return remove(deps, resolved.id, ctx, parsed.parsed.flags["delete-branch"] === true ? { deleteBranch: true } : {});
  }
  let out = "";
  let err = "";
  const io = {
    stdout: (text: string) => {
      out += text;
    },
    stderr: (text: string) => {
      err += text;
    },
    program: "/handoffs",
  };
  // With a person to ask, a prune lists what it would do, asks first, and then does exactly what
  // it listed (never a plan made again after the answer, which may hold more).
  if (parsed.ok && parsed.parsed.command === "prune" && ctx.hasUI && parsed.parsed.flags["dry-run"] !== true) {
    const plan = await planPrune(deps, { merged: parsed.parsed.flags.merged === true });
    const lines = plan.actions.flatMap((action) => describePruneAction(action).map((line) => `  ${line}`));
    if (plan.actions.length > 0 && !(await ask(ctx, pruneQuestion(lines)))) return;
    const status = await carryOutPrune(deps, io, plan, false);
    return report(ctx, `${out}${err}`.trimEnd(), status === 0 ? "info" : "error");
  }
  // Everything else is the pi-handoff command itself, its output reported here.
  const status = await main(words, {
    env: deps.env,
    ...io,
    execPath: process.execPath,
    cwd: ctx.cwd,
    piCommand,
    progress: (step, text) => ctx.ui.setStatus(STATUS_KEY, `${step}: ${text}`),
    deps,
  });
  ctx.ui.setStatus(STATUS_KEY, undefined);
  if (!ctx.hasUI) {
    (options.writeStderr ?? ((text: string) => process.stderr.write(text)))(`${out}${err}`);
    if (status !== 0) process.exitCode = 1;
    return;
  }
  report(ctx, `${out}${err}`.trimEnd(), status === 0 ? "info" : "error");
}

async function pick(
  deps: RecoveryDeps,
  ctx: ExtensionCommandContext,
  piCommand: readonly string[],
  options: HandoffsCommandOptions,
): Promise<void> {
  const inventory = await buildInventory(deps);
  if (!ctx.hasUI) {
    (options.writeStderr ?? ((text: string) => process.stderr.write(text)))(`${formatInventory(inventory)}\n`);
    return;
  }
  if (inventory.handoffs.length === 0) {
    ctx.ui.notify(formatInventory(inventory), "info");
    return;
  }
  const labels = inventory.handoffs.map((handoff) => formatPickerLabel(handoff));
  // Escape in a handoff's menu goes back to the list; Escape in the list closes /handoffs.
  for (;;) {
    const picked = await ctx.ui.select("Handoffs", labels);
    const handoff = picked === undefined ? undefined : inventory.handoffs[labels.indexOf(picked)];
    if (handoff === undefined) return;
    const choice = await chooseAction(ctx, handoff);
    if (choice !== undefined) return act(choice, handoff, deps, ctx, piCommand, options);
  }
}

/** The actions a handoff offers now, asked in a menu; undefined: Escape. */
async function chooseAction(ctx: ExtensionCommandContext, handoff: HandoffReport): Promise<MenuChoice | undefined> {
  const menu = handoffMenu(handoff, { canLand: canOfferLand(handoff), canRebase: canOfferRebase(handoff) });
  const choiceLabels = menu.choices.map((choice) => MENU_LABELS[choice]);
  const chosenLabel = await ctx.ui.select(menu.title, choiceLabels);
  return chosenLabel === undefined ? undefined : menu.choices[choiceLabels.indexOf(chosenLabel)];
}

/** Asks before a change (handoffs-questions.ts): true only on the answer that goes on. */
async function ask(ctx: ExtensionCommandContext, question: ChangeQuestion): Promise<boolean> {
  const answer =
    question.code === "choose"
      ? await ctx.ui.select(question.title, questionOptions(question))
      : await ctx.ui.input(question.title, "");
  const mistyped = mistypedName(question, answer);
  if (mistyped !== undefined) report(ctx, mistyped, "warning");
  return answerProceeds(question, answer);
}

function act(
  choice: MenuChoice,
  handoff: HandoffReport,
  deps: RecoveryDeps,
  ctx: ExtensionCommandContext,
  piCommand: readonly string[],
  options: HandoffsCommandOptions,
): Promise<void> {
  switch (choice) {
    case "inspect":
      // The same report as `/handoffs inspect <id>`: judged now, with its task and last report.
      return runHandoffs(`inspect ${handoff.id}`, ctx, options);
    case "focus":
      return focus(deps, handoff, ctx);
    case "relaunch":
      return relaunch(deps, handoff, ctx, piCommand);
    case "land":
      return land(
        handoff.id,
        { dryRun: false, remove: false, deleteBranch: false },
        ctx,
        options.landDeps ?? createLandDeps(process.env),
        { confirm: true },
      );
    case "rebase":
      return rebase(handoff.id, ctx, options.rebaseDeps ?? createRebaseDeps(process.env));
    case "remove":
      return remove(deps, handoff.id, ctx, {});
  }
}

/** The picker's "Rebase it": the plan is shown and confirmed first, then the same rebase runs. */
async function rebase(id: string, ctx: ExtensionCommandContext, deps: RebaseDeps): Promise<void> {
  const shown = await rebaseHandoff(deps, id, { dryRun: true });
  if (!shown.ok || shown.code !== "dry_run") return report(ctx, shown.message, shown.ok ? "info" : "error");
  if (!(await ask(ctx, rebaseQuestion(shown.plan.branch, shown.plan.onto.ref, describeRebasePlan(shown.plan))))) return;
  // What runs is what was shown: a branch or target that moved since is refused, not rebased.
  const outcome = await rebaseHandoff(deps, id, { dryRun: false, confirmed: shown.plan });
  report(ctx, outcome.message, outcome.ok ? "info" : "error");
}

/**
 * `/handoffs land <id|branch> [options]` (and the picker's "Land its commits"): lands, asking for a
 * strategy in the TUI when a fast-forward is not possible; from the picker (`confirm`), the plan is
 * shown and confirmed first. Typed with its arguments, it lands as `pi-handoff land` would.
 */
async function land(
  id: string,
  asked: LandRequest,
  ctx: ExtensionCommandContext,
  deps: LandDeps,
  options: { confirm: boolean },
): Promise<void> {
  let request = asked;
  const withUI = ctx.hasUI;
  let outcome = await landHandoff(deps, id, { ...request, dryRun: request.dryRun || (withUI && options.confirm) });
  if (!outcome.ok && outcome.choices !== undefined && withUI) {
    const question = strategyQuestion(outcome.message, outcome.choices);
    const strategy = await ctx.ui.select(question.title, question.options);
    const chosen = outcome.choices.find((choice) => choice === strategy);
    if (chosen === undefined) return;
    request = { ...request, strategy: chosen };
    outcome = await landHandoff(deps, id, { ...request, dryRun: request.dryRun || options.confirm });
  }
  // From the picker the plan is shown and confirmed first; then the same request lands for real.
  if (outcome.ok && outcome.code === "dry_run" && !request.dryRun) {
    // The confirmed plan lands with the very commits it made: their ids are the ones shown.
    const plan = describeLandPlan(outcome.plan, { made: true });
    if (!(await ask(ctx, landQuestion(outcome.plan.branch, outcome.plan.into, plan)))) return;
    outcome = await landHandoff(deps, id, {
      ...request,
      strategy: outcome.plan.strategy,
      into: outcome.plan.into,
      confirmed: outcome.plan,
    });
  }
  report(ctx, outcome.message, outcome.ok ? (removalFailedAfterLanding(outcome) ? "warning" : "info") : "error");
}

async function focus(deps: RecoveryDeps, handoff: HandoffReport, ctx: ExtensionCommandContext): Promise<void> {
  const focused = await focusHandoff(deps, handoff.id);
  if (!focused.ok) report(ctx, focused.message, "error");
}

async function relaunch(
  deps: RecoveryDeps,
  handoff: HandoffReport,
  ctx: ExtensionCommandContext,
  piCommand: readonly string[],
): Promise<void> {
  try {
    const outcome = await relaunchHandoff(
      {
        ...deps,
        // By default this Pi is the one to start again: the same Node and the same Pi entry point.
        piCommand,
        sleep: (ms) => sleep(ms),
        progress: (step, text) => ctx.ui.setStatus(STATUS_KEY, `relaunch ${step}: ${text}`),
        tick: (step, text) => ctx.ui.setStatus(STATUS_KEY, `relaunch ${step}: ${text}`),
        timeouts: launchTimeoutsFromEnv(deps.env),
      },
      handoff.id,
      { focus: true },
    );
    report(ctx, outcome.message, launchNoticeLevel(outcome.code));
  } finally {
    ctx.ui.setStatus(STATUS_KEY, undefined);
  }
}

/** `deleteBranch: true` was asked on the command line; otherwise a merged branch is offered for deletion. */
async function remove(
  deps: RecoveryDeps,
  id: string,
  ctx: ExtensionCommandContext,
  asked: { deleteBranch?: true },
): Promise<void> {
  const planned = await planRemoval(deps, id, { force: false, deleteBranch: asked.deleteBranch === true });
  // Only what --force lifts is asked about; any other refusal (a live Pi, a moved or blocked checkout) is said as it is.
  if (planned.plan === undefined || (planned.code === "refused" && planned.reason !== "needs_force")) {
    return report(ctx, planned.code === "refused" ? planned.message : "Nothing to remove.", "error");
  }
  const shown = planned.plan;
  const needsForce = planned.code === "refused";
  const branch = shown.manifest.branch;
  if (!(await ask(ctx, removalQuestion(branch, describeRemovalPlan(shown), needsForce)))) return;
  // --delete-branch asked for it already (planned above); otherwise it is offered when that loses nothing.
  const offer = shown.branch.code === "delete" || asked.deleteBranch === true ? undefined : branchDeletionOffer(shown);
  const deleteBranch =
    shown.branch.code === "delete" || (offer !== undefined && (await ask(ctx, branchDeletionQuestion(offer))));
  // The user saw what is lost; go on only if, checked again right now, nothing more would be.
  const confirmed = offer !== undefined && deleteBranch ? offer.plan : shown;
  const outcome = await removeHandoff(deps, id, { force: needsForce, deleteBranch }, (plan) =>
    losesNoMoreThan(plan, confirmed),
  );
  report(ctx, outcome.message, outcome.code === "removed" ? "info" : "error");
}
