/**
 * The offer after a reboot: a Pi that starts finds the retained handoffs whose Pi is gone while
 * their worktree and session are intact, and says once how many there are and the one command
 * that brings them back (`relaunch --all`). An offer, never an action: nothing is started here.
 *
 * Which handoffs a Pi speaks for: those of the repository it runs in, and those it parented
 * (a Pi anywhere, for its own handoffs). A Pi that is itself a handoff's child (its session is a
 * handoff's child session; Herdr may have resumed it in a restored pane) speaks only for those it
 * parented: its siblings are its parent's to offer, and Herdr may be resuming them right now.
 *
 * Invariants:
 * - Once per set: the set offered is remembered in `<agent dir>/handoff-worktree/offers/<key>.json`
 *   (`RestoreOfferSchema`), created exclusively, so of several Pi starting at once (Herdr restoring
 *   its panes) exactly one shows it. The key is the set of ids, each with its manifest's last change:
 *   the same handoffs lost again after a relaunch (a new change) are a new set, offered again.
 * - Read-only otherwise: the inventory and the lease are read, nothing of a handoff is written.
 */
import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode } from "../fs/probe.ts";
import type { Manifest } from "../manifest/schema.ts";
import { counted } from "../text.ts";
import { buildInventory, type InventoryDeps } from "../inventory/inventory.ts";
import { isRestorable } from "./relaunch-all.ts";
import type { HandoffReport } from "../inventory/report-schema.ts";
import { isChildOf, type ParentIdentity } from "../watch/watch.ts";

/** The record of one offer made: which handoffs, when, and by which Pi. */
export const RestoreOfferSchema = z.strictObject({
  version: z.literal(1),
  ids: z.array(z.string()).min(1),
  offeredAt: z.string(),
  pid: z.number().int().positive(),
});
export type RestoreOffer = z.infer<typeof RestoreOfferSchema>;

export function offersDir(agentDir: string): string {
  return join(agentDir, "handoff-worktree", "offers");
}

/** The set's name: its ids with each manifest's last change, sorted, hashed (32 hex). */
export function offerKey(reports: readonly Pick<HandoffReport, "id" | "updatedAt">[]): string {
  const lines = reports.map((report) => `${report.id}@${report.updatedAt}`).sort();
  return createHash("sha256").update(lines.join("\n")).digest("hex").slice(0, 32);
}

/** The Pi that may make the offer: where it runs and which session it is. */
export interface OfferingPi {
  /** The canonical common dir of the repository it runs in; undefined outside one. */
  repoCommonDir?: string;
  /** Its session, as a parent of handoffs. */
  session: ParentIdentity;
}

export type RestoreOfferOutcome =
  | { code: "offer"; ids: string[]; message: string }
  | { code: "none"; why: "nothing_gone" | "offered_before" | "not_wanted" };

/** Which handoffs this Pi speaks for (see the header). */
export function speaksFor(pi: OfferingPi, manifests: readonly Manifest[]): (manifest: Manifest) => boolean {
  const file = pi.session.sessionFile;
  const isAChild = file !== undefined && manifests.some((manifest) => manifest.child.sessionFile === file);
  return (manifest) =>
    isChildOf(manifest, pi.session) ||
    (!isAChild && pi.repoCommonDir !== undefined && manifest.repo.commonDir === pi.repoCommonDir);
}

/**
 * Finds the handoffs to offer back and claims the offer; `offer` means this Pi is the one to show
 * `message`. `program` is how the user runs recovery from where the notice is shown (`/handoffs`).
 */
export async function restoreOffer(
  deps: InventoryDeps,
  pi: OfferingPi,
  program: string,
  options: { pid?: number; stillWanted?: () => boolean } = {},
): Promise<RestoreOfferOutcome> {
  const pid = options.pid ?? process.pid;
  // Outside a repository `relaunch --all` has no repository to take: it takes them all.
  const command = `${program} relaunch --all${pi.repoCommonDir === undefined ? " --all-repos" : ""}`;
  const manifests = (await deps.store.list()).flatMap((entry) => (entry.ok ? [entry.manifest] : []));
  const inventory = await buildInventory(deps, { only: speaksFor(pi, manifests) });
  const gone = inventory.handoffs.filter(isRestorable);
  if (gone.length === 0) return { code: "none", why: "nothing_gone" };
  // Asked again right before the claim: an offer not shown must stay unclaimed for the next Pi.
  if (options.stillWanted?.() === false) return { code: "none", why: "not_wanted" };
  const dir = offersDir(deps.agentDir);
  await mkdir(dir, { recursive: true });
  const record: RestoreOffer = {
    version: 1,
    ids: gone.map((report) => report.id),
    offeredAt: deps.now().toISOString(),
    pid,
  };
  try {
    await writeFileAtomic(join(dir, `${offerKey(gone)}.json`), `${JSON.stringify(record, null, 2)}\n`, {
      overwrite: false,
    });
  } catch (error) {
    if (errorCode(error) === "EEXIST") return { code: "none", why: "offered_before" };
    throw error;
  }
  return { code: "offer", ids: record.ids, message: offerMessage(gone, command) };
}

/** One notice: how many, which (by branch, the first few), and the one command. */
export function offerMessage(gone: readonly Pick<HandoffReport, "branch">[], command: string): string {
  const shown = 5;
  const branches = gone.slice(0, shown).map((report) => report.branch);
  const more = gone.length > shown ? `, and ${gone.length - shown} more` : "";
  return `${counted(gone.length, "handoff")} ${gone.length === 1 ? "has" : "have"} no Pi running, with ${gone.length === 1 ? "its" : "their"} worktree and session intact (${branches.join(", ")}${more}). To bring ${gone.length === 1 ? "it" : "them all"} back, run: ${command}`;
}
