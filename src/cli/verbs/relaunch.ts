/**
 * The `pi-handoff` commands that bring a handoff's Pi back: `relaunch`, `relaunch --all`, `focus`.
 *
 * Invariants:
 * - A relaunch starts Pi with the Node that runs this CLI unless told otherwise (`CliIo.piCommand`),
 *   and reports its progress as `<step>: <text>` lines on stderr by default.
 */
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { RelaunchDeps } from "../../relaunch/relaunch.ts";
import type { RelaunchAllScope } from "../../relaunch/relaunch-all.ts";
import { type CliDeps, type CliIo, EXIT_OK, EXIT_REFUSED, finish, UsageError } from "../io.ts";

async function relaunchDeps(deps: CliDeps, io: CliIo): Promise<RelaunchDeps> {
  const [{ findPiCommand }, { launchTimeoutsFromEnv }] = await Promise.all([
    import("../../child/pi-command.ts"),
    import("../../child/timeouts.ts"),
  ]);
  return {
    ...deps,
    piCommand: io.piCommand ?? findPiCommand(deps.env, io.execPath),
    sleep: (ms) => sleep(ms),
    progress: io.progress ?? ((step, text) => io.stderr(`${step}: ${text}\n`)),
    timeouts: launchTimeoutsFromEnv(deps.env),
  };
}

/** `relaunch --all`: this repository's handoffs (or DIR's, or every repository's), one line each. */
export async function relaunchEvery(
  deps: CliDeps,
  io: CliIo,
  repoDir: string | undefined,
  allRepos: boolean,
): Promise<number> {
  let scope: RelaunchAllScope = { name: "every repository" };
  if (!allRepos) {
    const dir = resolve(io.cwd ?? process.cwd(), repoDir ?? ".");
    const repo = await deps.git.findRepository(dir);
    if (repo === undefined)
      throw new UsageError(
        repoDir === undefined
          ? `${dir} is not inside a git repository: run it in one, or give --repo DIR or --all-repos.`
          : `${dir} is not inside a git repository.`,
        "relaunch",
      );
    scope = { repoCommonDir: repo.commonDir, name: repo.mainCheckout };
  }
  const { formatRelaunchAll, relaunchAll } = await import("../../relaunch/relaunch-all.ts");
  const { recoveryCommand } = await import("../../child/pi-command.ts");
  const result = await relaunchAll(await relaunchDeps(deps, io), scope);
  io.stdout(`${formatRelaunchAll(result, recoveryCommand(io.env)).join("\n")}\n`);
  return result.ok ? EXIT_OK : EXIT_REFUSED;
}

export async function relaunch(deps: CliDeps, io: CliIo, id: string, focus: boolean): Promise<number> {
  const { relaunchHandoff } = await import("../../relaunch/relaunch.ts");
  const outcome = await relaunchHandoff(await relaunchDeps(deps, io), id, { focus });
  return finish(io, "relaunch", outcome.message, {
    done: outcome.code === "running",
    notFound: outcome.code === "refused" && outcome.reason === "not_found",
  });
}

export async function focus(deps: CliDeps, io: CliIo, id: string): Promise<number> {
  const { focusHandoff } = await import("../../relaunch/focus.ts");
  const outcome = await focusHandoff(deps, id);
  return finish(io, "focus", outcome.message, {
    done: outcome.ok,
    notFound: !outcome.ok && outcome.code === "not_found",
  });
}
