/**
 * What a handoff's launch leaves beside its manifest (the launcher, its notes and lock, the
 * postCreate runner and status, a fork's staging directory a kill left) and in the short-link directory, deleted once the handoff is
 * retired: a removed handoff is never launched again, and its record (the manifest) is what stays.
 *
 * Invariants:
 * - Called only after the manifest says `removed`, under the handoff's action lock: no relaunch
 *   can start (it refuses a removed handoff). A launcher shell that still runs in a pane left open
 *   (a launch never confirmed) may write a note again afterwards; it stays (a removed handoff's
 *   own files are not store leftovers), harmless, until deleted by hand.
 * - Deletes only files named from the manifest's own path and id, and the short link only while it
 *   still names this handoff's launcher; the manifest itself stays.
 */
import { rm, stat } from "node:fs/promises";
import { deleteLauncherFiles, forkStagingDir, launcherFiles } from "./launcher-file.ts";
import { deletePostCreateFiles, postCreateFiles } from "./post-create.ts";
import type { Deletions } from "../fs/unlink.ts";
import { errorClause } from "../errors.ts";

/** Deletes a retired handoff's launch files, each tried; how many went, and each that stayed. */
export async function deleteLaunchFiles(manifestPath: string, handoffId: string): Promise<Deletions> {
  const launcher = await deleteLauncherFiles(launcherFiles(manifestPath), handoffId);
  const postCreate = await deletePostCreateFiles(postCreateFiles(manifestPath));
  const staging = forkStagingDir(manifestPath);
  let staged = 0;
  const left = [...launcher.left, ...postCreate.left];
  if (
    await stat(staging).then(
      () => true,
      () => false,
    )
  ) {
    try {
      await rm(staging, { recursive: true, force: true });
      staged = 1;
    } catch (error) {
      left.push({ path: staging, reason: errorClause(error) });
    }
  }
  return { deleted: launcher.deleted + postCreate.deleted + staged, left };
}
