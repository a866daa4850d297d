/**
 * Argument completion for `/handoff-worktree`: flags, `--mux` values, local branches for
 * `--existing`, and refs (branches, remote branches, tags) for the base.
 *
 * Invariants:
 * - Pure apart from the `CompletionSource` it is given; never throws (a source that fails means
 *   no suggestions), and offers nothing inside the task (after ` -- `).
 * - Pi replaces the whole argument text with an item's `value`, so each value is the text typed so
 *   far with its last word completed (and a space after it, ready for the next word).
 * - A word typed out whole gets no suggestion (`completionsFor`), so Enter runs the command.
 * - The repository's refs come through the git ports with a short timeout each (the user is typing).
 */
import { completionsFor } from "../command-line-words.ts";
import { listMuxKinds, MUX_KINDS } from "../manifest/locations.ts";
import { GitCli } from "../git/git.ts";
import { CheckoutGit } from "../git/checkout-git.ts";

/** Timeout of each git call made while completing (the user is typing). */
const COMPLETION_GIT_TIMEOUT_MS = 3_000;

/** Suggestions for the arguments typed so far, from the repository at `cwd`. */
export function completeInRepository(
  prefix: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<CompletionItem[] | null> {
  const checkoutGit = new CheckoutGit({ env, timeoutMs: COMPLETION_GIT_TIMEOUT_MS });
  const git = new GitCli({ env, timeoutMs: COMPLETION_GIT_TIMEOUT_MS });
  return completeHandoffArgs(prefix, {
    refs: () => checkoutGit.listRefs(cwd),
    checkedOut: async () => {
      const repo = await git.findRepository(cwd);
      if (repo === undefined) return new Set<string>();
      const worktrees = await git.listWorktrees(repo.mainCheckout);
      return new Set(worktrees.flatMap((worktree) => (worktree.branch !== undefined ? [worktree.branch] : [])));
    },
  });
}

export interface CompletionItem {
  value: string;
  label: string;
  description?: string;
}

export interface CompletionSource {
  /** Local branches, remote-tracking branches and tags of the repository Pi runs in. */
  refs(): Promise<{ branches: string[]; remotes: string[]; tags: string[] }>;
  /** Branches checked out in some worktree (they cannot be handed off into). */
  checkedOut(): Promise<Set<string>>;
}

/** The flags, with what each does (shown beside the suggestion). */
export const FLAG_COMPLETIONS: ReadonlyArray<{ flag: string; description: string }> = [
  { flag: "--carry", description: "bring uncommitted changes to tracked files along" },
  { flag: "--carry=all", description: "bring uncommitted changes and untracked files along" },
  { flag: "--existing", description: "hand off into an existing local branch" },
  { flag: "--fetch", description: "fetch the base's remote branch first" },
  { flag: "--mux", description: listMuxKinds() },
  { flag: "--no-focus", description: "do not switch to the new window" },
  { flag: "--approve-repo-code", description: "approve the repository's postCreate commands and env (print mode)" },
  { flag: "--help", description: "show the options" },
];

const MAX_ITEMS = 50;

export async function completeHandoffArgs(prefix: string, source: CompletionSource): Promise<CompletionItem[] | null> {
  // Inside the task: free text, nothing to complete.
  if (/(^|\s)--(\s|$)/.test(prefix)) return null;
  const current = /\S*$/.exec(prefix)?.[0] ?? "";
  const before = prefix.slice(0, prefix.length - current.length);
  const previous = before.split(/\s+/).filter((word) => word.length > 0);
  const item = (label: string, description?: string): CompletionItem => ({
    value: `${before}${label} `,
    label,
    ...(description !== undefined ? { description } : {}),
  });
  const pick = (candidates: readonly string[], description?: string): CompletionItem[] | null => {
    const matching = completionsFor(candidates, current).slice(0, MAX_ITEMS);
    return matching.length > 0 ? matching.map((candidate) => item(candidate, description)) : null;
  };

  if (previous.at(-1) === "--mux") return pick(MUX_KINDS);
  if (current.startsWith("-")) {
    const flags = completionsFor(
      FLAG_COMPLETIONS.map((entry) => entry.flag),
      current,
    );
    const matching = FLAG_COMPLETIONS.filter((entry) => flags.includes(entry.flag));
    return matching.length > 0 ? matching.map((entry) => item(entry.flag, entry.description)) : null;
  }
  // Which positional word is being typed: flags (and the value after --mux) do not count.
  let positional = 0;
  for (let i = 0; i < previous.length; i++) {
    const word = previous[i] ?? "";
    if (word === "--mux") i += 1;
    else if (!word.startsWith("-")) positional += 1;
  }
  const existing = previous.includes("--existing");
  try {
    if (positional === 0 && existing) {
      const [{ branches }, busy] = await Promise.all([source.refs(), source.checkedOut()]);
      return pick(
        branches.filter((branch) => !busy.has(branch)),
        "existing branch",
      );
    }
    // The base: ignored with --existing, so nothing is offered there.
    if (positional === 1 && !existing) {
      const { branches, remotes, tags } = await source.refs();
      // A base typed out whole (any kind of ref) is complete: nothing is offered for it.
      if (completionsFor([...branches, ...remotes, ...tags], current).length === 0) return null;
      const items = [
        ...(pick(branches, "branch") ?? []),
        ...(pick(remotes, "remote branch") ?? []),
        ...(pick(tags, "tag") ?? []),
      ].slice(0, MAX_ITEMS);
      return items.length > 0 ? items : null;
    }
  } catch {
    return null;
  }
  return null;
}
