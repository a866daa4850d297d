/**
 * Argument completion for `/handoffs`: the commands (with what each does), then the handoff a
 * command takes, by branch and by id.
 *
 * Invariants:
 * - Read-only (the manifest store is listed, nothing else); never throws: a store that cannot be
 *   read means no suggestions.
 * - Each value is the text typed so far with its last word completed and a space after it, as Pi
 *   replaces the whole argument text with it (the same rule as /handoff-worktree's completion).
 */
import type { ManifestStore } from "../manifest/store.ts";
import { RECOVERY_COMMANDS, type RecoveryCommand } from "./command-line.ts";

/** One suggestion, in Pi's shape (`AutocompleteItem`). */
export interface RecoveryCompletion {
  value: string;
  label: string;
  description: string;
}

const DESCRIPTIONS: Readonly<Record<RecoveryCommand, string>> = {
  list: "every handoff, judged against what really exists",
  inspect: "one handoff in detail",
  focus: "switch to its window or workspace",
  relaunch: "start its Pi again",
  remove: "close its window and delete its worktree (asks first)",
  prune: "drop only what loses nothing",
  land: "bring its commits into the branch it started from",
};

const TAKES_HANDOFF: ReadonlySet<RecoveryCommand> = new Set(["inspect", "focus", "relaunch", "remove", "land"]);
const MAX_ITEMS = 50;

export async function completeRecoveryArgs(prefix: string, store: Pick<ManifestStore, "list">): Promise<RecoveryCompletion[] | null> {
  const current = /\S*$/.exec(prefix)?.[0] ?? "";
  const before = prefix.slice(0, prefix.length - current.length);
  const previous = before.split(/\s+/).filter((word) => word.length > 0);
  const item = (label: string, description: string): RecoveryCompletion => ({ value: `${before}${label} `, label, description });
  if (previous.length === 0) {
    const matching = RECOVERY_COMMANDS.filter((command) => command.startsWith(current));
    return matching.length > 0 ? matching.map((command) => item(command, DESCRIPTIONS[command])) : null;
  }
  const command = RECOVERY_COMMANDS.find((name) => name === previous[0]);
  if (command === undefined || !TAKES_HANDOFF.has(command) || previous.length !== 1 || current.startsWith("-")) return null;
  let entries: Awaited<ReturnType<ManifestStore["list"]>>;
  try {
    entries = await store.list();
  } catch {
    return null;
  }
  const items: RecoveryCompletion[] = [];
  // Newest first: the handoff just made is the likeliest one.
  for (const entry of [...entries].reverse()) {
    if (!entry.ok || entry.manifest.state === "removed") continue;
    if (entry.manifest.branch.startsWith(current)) items.push(item(entry.manifest.branch, `${entry.id} (${entry.manifest.state})`));
    else if (entry.id.startsWith(current)) items.push(item(entry.id, `${entry.manifest.branch} (${entry.manifest.state})`));
  }
  return items.length > 0 ? items.slice(0, MAX_ITEMS) : null;
}
