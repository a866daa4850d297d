/**
 * `/handoffs`: the recovery inventory inside Pi. Pick a handoff, then relaunch its Pi, switch to
 * its window, inspect it, or remove it (after a confirmation that lists what would be lost).
 * In print mode (no UI) the list goes to stderr.
 *
 * Decisions live in src/recovery/ (shared with the `pi-handoff` CLI); this file only asks.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { unsupportedPlatform } from "../src/process/platform.ts";
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { currentPiCommand } from "../src/launch/launch-command.ts";
import { launchTimeoutsFromEnv } from "../src/launch/timeouts.ts";
import { createRecoveryDeps, type RecoveryDeps } from "../src/recovery/deps.ts";
import { formatInventory, formatPickerLabel, formatReport } from "../src/recovery/format.ts";
import { buildInventory } from "../src/recovery/inventory.ts";
import type { HandoffReport } from "../src/recovery/report-schema.ts";
import { relaunchHandoff } from "../src/recovery/relaunch.ts";
import { branchDeletionOffer, describeRemovalPlan, losesNoMoreThan, planRemoval, removeHandoff } from "../src/recovery/remove.ts";
import { report } from "./report.ts";

const STATUS_KEY = "handoffs";

type Choice = "relaunch" | "focus" | "inspect" | "remove";
const CHOICE_LABELS: Readonly<Record<Choice, string>> = {
  relaunch: "Relaunch its Pi",
  focus: "Switch to its window",
  inspect: "Inspect",
  remove: "Remove it",
};

/** What tests replace; Pi's own run uses the defaults. */
export interface HandoffsCommandOptions {
  deps?: RecoveryDeps;
  /** How to start Pi on a relaunch (default: this very Pi). */
  piCommand?: readonly string[];
  /** Where print mode writes the list (default: stderr). */
  writeStderr?: (text: string) => void;
}

export async function runHandoffs(_args: string, ctx: ExtensionCommandContext, options: HandoffsCommandOptions = {}): Promise<void> {
  const refusal = unsupportedPlatform();
  if (refusal !== undefined) return report(ctx, refusal, "error");
  const deps = options.deps ?? createRecoveryDeps(process.env);
  const inventory = await buildInventory(deps);
  if (!ctx.hasUI) {
    (options.writeStderr ?? ((text: string) => process.stderr.write(text)))(`${formatInventory(inventory)}\n`);
    return;
  }
  if (inventory.handoffs.length === 0) {
    ctx.ui.notify(formatInventory(inventory), "info");
    return;
  }
  const labels = inventory.handoffs.map(formatPickerLabel);
  const picked = await ctx.ui.select("Handoffs", labels);
  const handoff = picked === undefined ? undefined : inventory.handoffs[labels.indexOf(picked)];
  if (handoff === undefined) return;

  const choices: Choice[] = [];
  if (handoff.actions.includes("relaunch")) choices.push("relaunch");
  if (handoff.actions.includes("focus")) choices.push("focus");
  choices.push("inspect");
  if (handoff.actions.includes("remove")) choices.push("remove");
  const choiceLabels = choices.map((choice) => CHOICE_LABELS[choice]);
  const chosenLabel = await ctx.ui.select(`${handoff.branch} (${handoff.id})`, choiceLabels);
  const choice = chosenLabel === undefined ? undefined : choices[choiceLabels.indexOf(chosenLabel)];
  switch (choice) {
    case undefined:
      return;
    case "inspect":
      return report(ctx, formatReport(handoff), "info");
    case "focus":
      return focus(deps, handoff, ctx);
    case "relaunch":
      return relaunch(deps, handoff, ctx, options.piCommand ?? currentPiCommand());
    case "remove":
      return remove(deps, handoff, ctx);
  }
}

async function focus(deps: RecoveryDeps, handoff: HandoffReport, ctx: ExtensionCommandContext): Promise<void> {
  const mux = deps.muxFor(handoff.mux);
  if (!mux.ok) return report(ctx, mux.message, "error");
  const focused = await mux.mux.focus(handoff.mux);
  if (!focused.ok) report(ctx, focused.message, "error");
}

async function relaunch(deps: RecoveryDeps, handoff: HandoffReport, ctx: ExtensionCommandContext, piCommand: readonly string[]): Promise<void> {
  try {
    const outcome = await relaunchHandoff(
      {
        ...deps,
        // By default this Pi is the one to start again: the same Node and the same Pi entry point.
        piCommand,
        sleep: (ms) => sleep(ms),
        progress: (step, text) => ctx.ui.setStatus(STATUS_KEY, `relaunch ${step}: ${text}`),
        timeouts: launchTimeoutsFromEnv(deps.env),
      },
      handoff.id,
      { focus: true },
    );
    report(ctx, outcome.message, outcome.code === "running" ? "info" : outcome.code === "launch_unconfirmed" ? "warning" : "error");
  } finally {
    ctx.ui.setStatus(STATUS_KEY, undefined);
  }
}

async function remove(deps: RecoveryDeps, handoff: HandoffReport, ctx: ExtensionCommandContext): Promise<void> {
  const planned = await planRemoval(deps, handoff.id, { force: false, deleteBranch: false });
  if (planned.plan === undefined) {
    return report(ctx, planned.code === "refused" ? planned.message : "Nothing to remove.", "error");
  }
  const shown = planned.plan;
  const needsForce = planned.code === "refused";
  if (!(await ctx.ui.confirm(`Remove handoff ${handoff.branch}?`, describeRemovalPlan(shown).join("\n")))) return;
  const offer = branchDeletionOffer(shown);
  const deleteBranch = offer !== undefined && (await ctx.ui.confirm(offer.question, offer.detail));
  // The user saw what is lost; go on only if, checked again right now, nothing more would be.
  const confirmed = deleteBranch ? offer.plan : shown;
  const outcome = await removeHandoff(deps, handoff.id, { force: needsForce, deleteBranch }, (plan) => losesNoMoreThan(plan, confirmed));
  report(ctx, outcome.message, outcome.code === "removed" ? "info" : "error");
}
