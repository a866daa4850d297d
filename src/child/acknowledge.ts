/**
 * The child side of the launch contract: a Pi that starts on a handoff child session says so in
 * the manifest (pid, time), which is what the parent waits for.
 *
 * Invariants:
 * - Only a session whose own branch holds the handoff message, and whose file is the manifest's
 *   child session, can acknowledge; any other session (a fork of it, a copy) leaves it alone.
 * - A removed or failed-before-launch handoff is never revived by an acknowledgement.
 * - Reads the session entries it is given; never writes a session file.
 */
import { realpathSync } from "node:fs";
import type { Manifest } from "../manifest/schema.ts";
import type { ManifestStore } from "../manifest/store.ts";
import { HANDOFF_MESSAGE_TYPE, HandoffDetailsSchema, type HandoffDetails } from "../session/handoff-message.ts";

export const KICKOFF_MESSAGE_TYPE = "handoff-worktree-kickoff";

/** The minimal view of a session entry this module needs (Pi's `SessionEntry` fits it). */
export interface EntryView {
  type: string;
  customType?: string;
  details?: unknown;
}

/** The handoff message on this branch, if the session is a handoff child. */
export function findHandoffDetails(branch: readonly EntryView[]): HandoffDetails | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const entry = branch[i];
    if (entry?.type === "custom_message" && entry.customType === HANDOFF_MESSAGE_TYPE) {
      const details = HandoffDetailsSchema.safeParse(entry.details);
      return details.success ? details.data : undefined;
    }
  }
  return undefined;
}

/** Whether the task kickoff was already sent on this branch (so a restart does not send it again). */
export function kickoffSent(branch: readonly EntryView[]): boolean {
  return branch.some((entry) => entry.type === "custom_message" && entry.customType === KICKOFF_MESSAGE_TYPE);
}

export type AckOutcome =
  | { code: "acknowledged"; manifest: Manifest }
  | { code: "not_a_handoff_child" }
  | { code: "not_this_session"; message: string }
  | { code: "not_pending"; message: string };

function samePath(a: string, b: string): boolean {
  const canonical = (path: string): string => {
    try {
      return realpathSync(path);
    } catch {
      return path;
    }
  };
  return a === b || canonical(a) === canonical(b);
}

const ACKNOWLEDGEABLE: ReadonlySet<Manifest["state"]> = new Set(["launching", "launch_unconfirmed", "running"]);

/**
 * Whether a child that starts now may mark the handoff running: any launch in progress or done,
 * and a launch that failed once the child session existed (the user may start it by hand, as
 * the failure notice says). Never a removed handoff or one that failed before its session existed.
 */
function acknowledgeable(manifest: Manifest): boolean {
  if (ACKNOWLEDGEABLE.has(manifest.state)) return true;
  return manifest.state === "failed" && (manifest.error?.step === "launch" || manifest.error?.step === "confirm");
}

export async function acknowledgeHandoff(input: {
  store: ManifestStore;
  details: HandoffDetails;
  sessionFile: string | undefined;
  pid: number;
  now: () => Date;
}): Promise<AckOutcome> {
  const { store, details, sessionFile } = input;
  if (sessionFile === undefined) return { code: "not_a_handoff_child" };
  const read = await store.read(details.handoffId);
  if (!read.ok) return { code: "not_this_session", message: read.message };
  const manifest = read.manifest;
  if (manifest.child.sessionFile === undefined || !samePath(manifest.child.sessionFile, sessionFile)) {
    return { code: "not_this_session", message: `Handoff ${manifest.id} belongs to another session file.` };
  }
  if (!acknowledgeable(manifest)) {
    return { code: "not_pending", message: `Handoff ${manifest.id} is ${manifest.state}; nothing to acknowledge.` };
  }
  const at = input.now().toISOString();
  const { pid } = input;
  const acknowledge = (m: Pick<Manifest, "child">): void => {
    m.child = { ...m.child, pid, ackAt: at, confirmedBy: "ack" };
  };
  // Checked again under the lock: a change from another Pi (or another Pi's pid) is a transition,
  // recorded in the history; this Pi acknowledging again only dates its acknowledgement anew.
  const moved = await store.transitionIf(
    manifest.id,
    (m) => acknowledgeable(m) && (m.state !== "running" || m.child.pid !== pid),
    "running",
    acknowledge,
    `acknowledged by pid ${pid}`,
  );
  if (moved.child.ackAt === at || moved.state !== "running" || moved.child.pid !== pid)
    return { code: "acknowledged", manifest: moved };
  const updated = await store.update(manifest.id, (m) => {
    if (acknowledgeable(m) && m.state === "running" && m.child.pid === pid) acknowledge(m);
  });
  return { code: "acknowledged", manifest: updated };
}
