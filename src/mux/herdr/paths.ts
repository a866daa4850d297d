/**
 * Where things are, as the Herdr backend compares them: paths by realpath, and the Herdr location
 * a caller gave, checked before any call names its ids.
 *
 * Invariants:
 * - Paths are compared by realpath: Herdr does not canonicalize the paths it reports. A path that
 *   does not exist (any more) compares as itself made absolute.
 * - A location is used only when it is a Herdr one and its ids are ids Herdr prints (protocol.ts);
 *   anything else is `invalid_location`, before Herdr is asked. Any id Herdr prints is used as it
 *   is (legacy hex ids included).
 * - Nothing here runs Herdr; the only outside read is the file system's realpath.
 */
import { realpath } from "node:fs/promises";
import { resolve, sep } from "node:path";
import type { MuxLocation } from "../../manifest/schema.ts";
import type { MuxFailure } from "../types.ts";
import type { HerdrLocation } from "../../manifest/locations.ts";
import { isHerdrId, type HerdrWorktreeInfo } from "./protocol.ts";

/** The realpath of `path` when it exists, else the path made absolute. */
export async function canonicalPath(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return resolve(path);
  }
}

/** Whether `path` is `root` or inside it (both canonical). */
export function isWithin(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/** The entry of `entries` whose checkout is `wanted` (canonical). */
export async function findByPath(
  entries: readonly HerdrWorktreeInfo[],
  wanted: string,
): Promise<HerdrWorktreeInfo | undefined> {
  for (const entry of entries) {
    if ((await canonicalPath(entry.path)) === wanted) return entry;
  }
  return undefined;
}

export function socketOf(socketPath: string | undefined): { socketPath?: string } {
  return socketPath !== undefined ? { socketPath } : {};
}

export function asHerdrLocation(location: MuxLocation): { ok: true; location: HerdrLocation } | MuxFailure {
  if (location.kind !== "herdr") return invalidLocation(`A ${location.kind} location was given to the Herdr backend.`);
  return { ok: true, location };
}

/** The pane a location names, with the socket of its server. */
export function paneOf(
  location: MuxLocation,
  defaultSocketPath: string | undefined,
): { ok: true; paneId: string; socketPath: string | undefined } | MuxFailure {
  const herdr = asHerdrLocation(location);
  if (!herdr.ok) return herdr;
  const { paneId, socketPath = defaultSocketPath } = herdr.location;
  if (!isHerdrId(paneId)) return invalidLocation("The Herdr location has no valid pane id.");
  return { ok: true, paneId, socketPath };
}

export function invalidLocation(message: string): MuxFailure {
  return { ok: false, code: "invalid_location", message };
}
