/**
 * Argument completion for `/handoffs`: the commands (with what each does), then the handoff a
 * command takes, by branch and by id.
 *
 * Invariants:
 * - Read-only (the manifest store is listed, nothing else); never throws: a store that cannot be
 *   read means no suggestions.
 * - Each value is the text typed so far with its last word completed and a space after it, as Pi
 *   replaces the whole argument text with it (the same rule as /handoff-worktree's completion).
 * - A word typed out whole (a command, a branch, an id) gets no suggestion (`completionsFor`), so
 *   Enter runs the command.
 */
import { completionsFor } from "../command-line-words.ts";
import type { ManifestStore } from "../manifest/store.ts";
import { RECOVERY_COMMANDS, TAKES_HANDOFF, type RecoveryCommand } from "./command-line.ts";

/** One suggestion, in Pi's shape (`AutocompleteItem`). */
export interface RecoveryCompletion {
  value: string;
  label: string;
  description: string;
}

/** What each command does, shown beside it (here, and in the shell completion scripts). */
export const COMMAND_DESCRIPTIONS: Readonly<Record<RecoveryCommand, string>> = {
  list: "every handoff, judged against what really exists",
  inspect: "one handoff in detail",
  env: "its ports and variables, as export lines for a shell",
  focus: "switch to its window or workspace",
  relaunch: "start its Pi again",
  remove: "close its window and delete its worktree (asks first)",
  prune: "drop only what loses nothing",
  land: "bring its commits into the branch it started from",
  forecast: "the files that would conflict landing each handoff, and between siblings",
  rebase: "re-make its commits on the tip of the branch it lands into, and tell its Pi",
  tree: "the handoff tree under a session, with what each node cost",
};

const MAX_ITEMS = 50;

export async function completeRecoveryArgs(
  prefix: string,
  store: Pick<ManifestStore, "list">,
): Promise<RecoveryCompletion[] | null> {
  const current = /\S*$/.exec(prefix)?.[0] ?? "";
  const before = prefix.slice(0, prefix.length - current.length);
  const previous = before.split(/\s+/).filter((word) => word.length > 0);
  const item = (label: string, description: string): RecoveryCompletion => ({
    value: `${before}${label} `,
    label,
    description,
  });
  if (previous.length === 0) {
    const matching = completionsFor(RECOVERY_COMMANDS, current);
    return matching.length > 0 ? matching.map((command) => item(command, COMMAND_DESCRIPTIONS[command])) : null;
  }
  const command = RECOVERY_COMMANDS.find((name) => name === previous[0]);
  if (command === undefined || !TAKES_HANDOFF[command] || previous.length !== 1 || current.startsWith("-")) return null;
  let entries: Awaited<ReturnType<ManifestStore["list"]>>;
  try {
    entries = await store.list();
  } catch {
    return null;
  }
  const live = entries.flatMap((entry) => (entry.ok && entry.manifest.state !== "removed" ? [entry] : []));
  // A handoff named whole, by branch or by id, is complete.
  if (
    completionsFor([...live.map((entry) => entry.manifest.branch), ...live.map((entry) => entry.id)], current)
      .length === 0
  )
    return null;
  const items: RecoveryCompletion[] = [];
  // Newest first: the handoff just made is the likeliest one.
  for (const entry of [...live].reverse()) {
    if (entry.manifest.branch.startsWith(current))
      items.push(item(entry.manifest.branch, `${entry.id} (${entry.manifest.state})`));
    else if (entry.id.startsWith(current))
      items.push(item(entry.id, `${entry.manifest.branch} (${entry.manifest.state})`));
  }
  return items.length > 0 ? items.slice(0, MAX_ITEMS) : null;
}
