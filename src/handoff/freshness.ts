/**
 * Base freshness: is the base behind the remote branch it follows? Optionally fetch that one
 * branch first (`--fetch`).
 *
 * Invariants:
 * - Without `fetch` nothing touches the network and nothing is written: the warning compares with
 *   the remote-tracking ref as last fetched, and says so.
 * - With `fetch` exactly one remote branch is fetched into its remote-tracking ref (with the git
 *   port's timeout), also one never fetched before (`origin/colleague` before any `git fetch`:
 *   `+refs/heads/colleague:refs/remotes/origin/colleague`); the local base branch is never moved. A fetch that cannot be done is a refusal
 *   (the user asked for a current base), before anything else is written.
 * - A freshness check that cannot be made (no upstream, git trouble) is silent: it only warns.
 */
import type { CheckoutGitPort } from "../git/types.ts";
import { errorClause } from "../errors.ts";
import { counted } from "../text.ts";

export type Freshness = { ok: true; notes: string[] } | { ok: false; message: string };

function shortRef(ref: string): string {
  return ref.replace(/^refs\/(?:heads|remotes|tags)\//, "");
}

/**
 * `ref` is the base as typed (`HEAD`, `main`, `origin/main`) or, with `--existing`, the branch's
 * full ref; `label` is how the user knows it.
 */
export async function checkBaseFreshness(
  git: CheckoutGitPort,
  checkout: string,
  input: { ref: string; label: string; fetch: boolean },
): Promise<Freshness> {
  let upstream: Awaited<ReturnType<CheckoutGitPort["upstreamOf"]>>;
  try {
    upstream = await git.upstreamOf(checkout, input.ref);
  } catch (error) {
    if (input.fetch)
      return {
        ok: false,
        message: `Could not find the remote branch of ${input.label} to fetch (${errorClause(error)}); hand off without --fetch.`,
      };
    return { ok: true, notes: [] };
  }
  const notes: string[] = [];
  let fetched = false;
  // `origin/colleague` that was never fetched: no ref yet, but the remote branch it names can be.
  let firstFetch = false;
  if (input.fetch && upstream === undefined) {
    try {
      upstream = await git.unfetchedRemoteBranch(checkout, input.ref);
    } catch {
      upstream = undefined;
    }
    firstFetch = upstream !== undefined;
  }
  if (input.fetch) {
    if (upstream === undefined) {
      return {
        ok: false,
        message: `${input.label} follows no remote branch, so --fetch has nothing to fetch; hand off without --fetch (or give a remote branch such as origin/main as the base).`,
      };
    }
    if (upstream.remote === ".") {
      notes.push(
        `${input.label} follows the local branch ${shortRef(upstream.upstream)}, so there was nothing to fetch.`,
      );
    } else {
      try {
        await git.fetchUpstream(checkout, upstream);
      } catch (error) {
        return { ok: false, message: `${errorClause(error)}; hand off without --fetch, or try again.` };
      }
      fetched = true;
      notes.push(
        `Fetched ${shortRef(upstream.remoteRef)} from ${upstream.remote} first${firstFetch ? ` (it had not been fetched before, so ${shortRef(upstream.upstream)} is new here)` : ""}.`,
      );
    }
  }
  // A remote-tracking base is its own upstream: after a fetch it is current by definition.
  if (upstream === undefined || upstream.ref === upstream.upstream) return { ok: true, notes };
  let behind: number;
  try {
    behind = await git.countCommits(checkout, upstream.ref, upstream.upstream);
  } catch {
    return { ok: true, notes };
  }
  if (behind > 0) {
    const when = fetched ? "just fetched" : "as last fetched; add --fetch to fetch it first";
    notes.push(
      `Warning: ${input.label} is ${counted(behind, "commit")} behind ${shortRef(upstream.upstream)} (${when}); the worktree starts from ${input.label} as it is.`,
    );
  }
  return { ok: true, notes };
}
