/**
 * Who holds a handoff's action lock (the record of `.<id>.action` beside the manifests) and the
 * answer a second actor gets: the format and its words, kept apart from the store that takes it
 * (store.ts `withActionLock`) and from the lock's protocol (locks/action-lock.ts).
 *
 * Invariants:
 * - `ActionHolderSchema` is the one definition of the record: the holder identity of src/locks/
 *   (pid, start, start time, machine) plus the handoff, the action and since when.
 * - A `busy` answer names the holder's action, pid and since when; where the holder cannot be
 *   checked (another machine, an uncomparable start) it says why it still counts as holding.
 */
import { z } from "zod";
import { HolderSchema } from "../locks/holder.ts";
import { livenessClause, type Liveness } from "../locks/liveness.ts";

/** What holds a handoff: the actions that decide and act on one handoff. */
export const HANDOFF_ACTIONS = ["handoff", "relaunch", "remove", "prune", "focus", "land", "rebase", "queue"] as const;
export type HandoffAction = (typeof HANDOFF_ACTIONS)[number];

const ACTION_VERBS: Readonly<Record<HandoffAction, string>> = {
  handoff: "setting it up (the handoff itself)",
  relaunch: "relaunching it",
  remove: "removing it",
  prune: "pruning it",
  focus: "switching to it",
  land: "landing it",
  rebase: "rebasing it",
  // The queue's own lock (queue/queue.ts) names a repository, not a handoff.
  queue: "landing the queue of its repository",
};

export const ActionHolderSchema = HolderSchema.extend({
  id: z.string(),
  action: z.enum(HANDOFF_ACTIONS),
  since: z.string().datetime({ offset: true }),
});
export type ActionHolder = z.infer<typeof ActionHolderSchema>;

/** The answer to a second actor: at once, naming what the first one is doing. */
export interface ActionBusy {
  ok: false;
  code: "busy";
  message: string;
  holder: ActionHolder;
}

export function isActionBusy(value: unknown): value is ActionBusy {
  return isRecord(value) && value.ok === false && value.code === "busy" && isRecord(value.holder);
}

export function actionBusy(id: string, holder: ActionHolder, liveness: Liveness, lockPath?: string): ActionBusy {
  // A holder that could not be checked: say why it still counts (another machine, an unknown start),
  // and how to free it when that is wrong (this machine renamed: a container's new hostname).
  const unchecked =
    liveness.verdict === "unknown"
      ? ` Process ${holder.pid} ${livenessClause(holder, liveness)}.${lockPath === undefined ? "" : ` If that process has ended${liveness.code === "another_machine" ? ` (or ${holder.host ?? "that machine"} is this machine under an earlier name)` : ""}, delete ${lockPath} and try again.`}`
      : "";
  return {
    ok: false,
    code: "busy",
    holder,
    message: `Handoff ${id} is busy: process ${holder.pid} is ${ACTION_VERBS[holder.action]} (since ${holder.since}); nothing was done, try again once it has finished.${unchecked}`,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
