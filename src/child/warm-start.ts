/**
 * The warm start: a window that runs the launcher as its command starts the child's Node with
 * Pi's modules loading (warm-gate.mjs) while the handoff still checks the worktree out and forks
 * the conversation; the launch step then lets that Pi go instead of starting a new one. Loading
 * Pi is most of its start-up (about 300 ms of a bare `pi --version`), and it no longer waits.
 *
 * Invariants:
 * - Only where the child is started exactly as this Pi was (`[node, entry]`, this Node), since the
 *   gate is loaded into that Node; anything else starts cold, as before.
 * - The warm process starts with every variable Pi is given (the handoff's own, then Pi's,
 *   `piVariables`), so Pi's modules load as they would in a cold start; the gate refuses a spec
 *   whose variables differ, and the launcher then starts Pi cold.
 * - The spec (`<stem>.launch.warm`) is written with the params at each launch step and carries its
 *   token; its format is defined here (`WarmSpecSchema`), the gate only reads it.
 */
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import type { Manifest } from "../manifest/schema.ts";
import { handoffVariables, piVariables, type LaunchCommand, type LaunchEnvironment } from "./launch-command.ts";

/** Passed to `--import` as a URL: a path holding `%` or `#` would be read as one. */
const GATE_URL = new URL("./warm-gate.mjs", import.meta.url);

/** The variable the gate reads (warm-gate.mjs): its files, as JSON `{go, spec, ran}`. */
export const WARM_ENV = "PI_HANDOFF_WARM";

export const WarmSpecSchema = z.object({
  token: z.string(),
  cwd: z.string(),
  argv: z.array(z.string()).min(2),
  env: z.array(z.tuple([z.string(), z.string()])),
});
export type WarmSpec = z.infer<typeof WarmSpecSchema>;

/** How a window's launcher starts the warm process. */
export interface WarmStart {
  /** `node --import <gate> <entry>`. */
  argv: string[];
  /** Every variable Pi is given, each name once (the last value wins, as in a cold start). */
  variables: Array<[string, string]>;
}

/** The warm start for a child started with `piCommand`, or none where it cannot be used. */
export function warmStartFor(
  manifest: Pick<Manifest, "id" | "mux" | "ports" | "env">,
  environment: LaunchEnvironment,
  execPath: string = process.execPath,
): WarmStart | undefined {
  const [node, entry, ...rest] = environment.piCommand;
  if (node !== execPath || entry === undefined || rest.length > 0 || process.versions.bun !== undefined)
    return undefined;
  return {
    argv: [node, "--import", GATE_URL.href, entry],
    variables: lastWins([...handoffVariables(manifest), ...piVariables(manifest, environment)]),
  };
}

/** The spec a warm process runs Pi with: this launch's words, place and variables. */
export function warmSpecFor(token: string, command: LaunchCommand): WarmSpec {
  return { token, cwd: command.cwd, argv: command.argv, env: lastWins([...command.handoffEnv, ...command.env]) };
}

export async function writeWarmSpec(file: string, spec: WarmSpec): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(WarmSpecSchema.parse(spec))}\n`);
}

function lastWins(pairs: ReadonlyArray<readonly [string, string]>): Array<[string, string]> {
  return [...new Map(pairs.map(([name, value]) => [name, value] as const))].map(([name, value]) => [name, value]);
}
