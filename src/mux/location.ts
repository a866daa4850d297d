/**
 * What every terminal's recorded location shares: the helper that builds its schema, and the one
 * check that a pane's working directory is inside a worktree.
 *
 * Invariants:
 * - A location is a strict object: `kind` plus optional strings, in the order they are written, so
 *   a manifest's bytes are stable and an unknown field is a decoding error, not silently kept.
 * - Pure: no outside call, no file read.
 */
import { z } from "zod";

/**
 * Whether a pane's working directory, as a terminal shows it (Linux's " (deleted)" suffix on a
 * directory that is gone), is `dir` or inside it: the check every backend makes before it acts on
 * a recorded window.
 */
export function paneCwdInside(path: string | null | undefined, dir: string): boolean {
  if (path === undefined || path === null) return false;
  const shown = path.replace(/ \(deleted\)$/, "");
  return shown === dir || shown.startsWith(`${dir}/`);
}

/** A location schema for `kind` with these optional string fields (ids, a socket path). */
export function locationSchema<K extends string, F extends string>(kind: K, ...fields: F[]) {
  const optional = Object.fromEntries(fields.map((field) => [field, z.string().optional()])) as Record<
    F,
    z.ZodOptional<z.ZodString>
  >;
  return z.strictObject({ kind: z.literal(kind), ...optional });
}
