/**
 * `pi-handoff env <handoff>`: the variables everything run for a handoff gets (its ports, the
 * settings' `env` as recorded), for a shell of the user's own: `eval "$(pi-handoff env feat/x)"`.
 *
 * Invariants:
 * - Read-only: the manifest alone, derived by the one rule the launcher uses
 *   (`handoffVariables`, child/launch-command.ts), so the shell gets what the child got.
 * - The `export` lines quote every value (`shellQuote`, tested with a real sh): evaluating them
 *   sets exactly those bytes and runs nothing, whatever a value holds.
 * - A removed handoff holds no ports (another may have them now): it is refused, not printed.
 */
import { exportLines, handoffVariables } from "../child/launch-command.ts";
import type { ManifestStore } from "../manifest/store.ts";
import { RECOVERY_JSON_VERSION, type EnvReport } from "./report-schema.ts";

export type EnvOutcome =
  | { code: "found"; report: EnvReport; lines: string[] }
  | { code: "not_found" | "invalid" | "removed"; message: string };

export async function handoffEnvironment(store: Pick<ManifestStore, "read" | "dir">, id: string): Promise<EnvOutcome> {
  const read = await store.read(id);
  if (!read.ok)
    return read.code === "not_found"
      ? { code: "not_found", message: `There is no handoff with id ${id} in ${store.dir}.` }
      : { code: "invalid", message: read.message };
  const manifest = read.manifest;
  if (manifest.state === "removed")
    return {
      code: "removed",
      message: `Handoff ${id} was removed, so its ports were released (another handoff may hold them now) and it sets nothing.`,
    };
  const variables = handoffVariables(manifest);
  return {
    code: "found",
    report: {
      version: RECOVERY_JSON_VERSION,
      id,
      branch: manifest.branch,
      worktreePath: manifest.worktree.path,
      ports: [...(manifest.ports ?? [])],
      env: Object.fromEntries(variables),
    },
    lines: exportLines(variables),
  };
}

/** The sentence for a handoff that reserves and sets nothing (said on stderr; stdout stays empty for eval). */
export function nothingToExport(id: string): string {
  return `Handoff ${id} reserves no ports and sets no variables (the settings had no "ports" or "env" when it was made).`;
}
