/**
 * Naming a handoff the way a person does: its full id, a unique prefix of the id, or its branch.
 * Shared by `pi-handoff` and `/handoffs`, so every place that takes an id takes the same names.
 *
 * Invariants:
 * - Read-only: lists the store, changes nothing.
 * - An exact id always wins; otherwise the name must match exactly one handoff, by id prefix or by
 *   branch. A branch that a live (not removed) handoff holds names that one, so a removed record of
 *   the same branch does not make the name ambiguous.
 * - Several matches are refused in one sentence that lists the candidates (id and branch), never
 *   guessed; an unreadable manifest can still be named by its id (its error is reported then).
 */
import type { ManifestStore } from "../manifest/store.ts";
import { failed, type Outcome } from "../outcome.ts";

export type ResolveFailure = "not_found" | "ambiguous";
export type ResolveOutcome = Outcome<{ id: string }, ResolveFailure>;

/** Candidates listed in an ambiguity refusal, at most. */
const MAX_LISTED = 6;

export async function resolveHandoffName(
  store: Pick<ManifestStore, "list" | "dir">,
  name: string,
): Promise<ResolveOutcome> {
  if (name.trim() === "")
    return failed("not_found", "Name a handoff by its id or its branch (pi-handoff list shows them).");
  const entries = await store.list();
  if (entries.some((entry) => entry.id === name)) return { ok: true, id: name };
  const byPrefix = entries.filter((entry) => entry.id.startsWith(name));
  const byBranch = entries.flatMap((entry) => (entry.ok && entry.manifest.branch === name ? [entry] : []));
  const liveByBranch = byBranch.filter((entry) => entry.manifest.state !== "removed");
  const branchMatches = liveByBranch.length > 0 ? liveByBranch : byBranch;
  const candidates = [...new Map([...byPrefix, ...branchMatches].map((entry) => [entry.id, entry])).values()];
  const only = candidates[0];
  if (candidates.length === 1 && only !== undefined) return { ok: true, id: only.id };
  if (candidates.length === 0) {
    return failed("not_found", `There is no handoff with id or branch ${JSON.stringify(name)} in ${store.dir}.`);
  }
  const listed = candidates
    .slice(0, MAX_LISTED)
    .map((entry) =>
      entry.ok
        ? `${entry.id} (${entry.manifest.branch}${entry.manifest.state === "removed" ? ", removed" : ""})`
        : entry.id,
    )
    .join(", ");
  const more = candidates.length > MAX_LISTED ? ` and ${candidates.length - MAX_LISTED} more` : "";
  return failed(
    "ambiguous",
    `${JSON.stringify(name)} names ${candidates.length} handoffs (${listed}${more}); give more of the id.`,
  );
}
