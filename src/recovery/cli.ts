/**
 * `pi-handoff`: list, inspect, relaunch, remove and prune handoffs from a shell.
 *
 *   pi-handoff list [--repo DIR] [--all] [--json]
 *   pi-handoff inspect <id> [--json]
 *   pi-handoff relaunch <id> [--no-focus]
 *   pi-handoff remove <id> [--force] [--delete-branch]
 *   pi-handoff prune [--dry-run]
 *
 * Lives in src/ (not scripts/) because it ships in the package: `bin/pi-handoff.mjs` loads it.
 *
 * Invariants:
 * - Exit codes: 0 done; 1 refused or failed (one sentence on stderr saying why); 2 bad input (one
 *   sentence on stderr: an unknown command or option, a missing or unknown id, a bad directory).
 * - `--json` output is validated against the published schema (report-schema.ts) before it is printed.
 * - Every outside call has a timeout (git per call, tmux per call, the launch's shell and confirm waits).
 * - What a removal loses is printed before anything is removed.
 * - The manifests are the agent dir's (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`), as in Pi.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { unsupportedPlatform } from "../process/platform.ts";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { launchTimeoutsFromEnv } from "../launch/timeouts.ts";
import { createRecoveryDeps, type RecoveryDeps } from "./deps.ts";
import { formatInventory, formatReport } from "./format.ts";
import { buildInventory, inspectHandoff } from "./inventory.ts";
import { InspectReportSchema, InventoryReportSchema, RECOVERY_JSON_VERSION } from "./report-schema.ts";
import { findPiCommand } from "./pi-command.ts";
import { relaunchHandoff } from "./relaunch.ts";
import { describePruneAction, describeRemovalPlan, executePrune, planPrune, removeHandoff } from "./remove.ts";
import { errorMessage } from "../errors.ts";

const ID_PATTERN = /^[a-z0-9][a-z0-9-]{2,80}$/;

export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /** The Node that runs this CLI; a JavaScript Pi is started with it. */
  execPath: string;
  now?: () => Date;
  /** The system this runs on (tests pass another one); defaults to `process.platform`. */
  platform?: NodeJS.Platform;
}

const USAGE = `Usage: pi-handoff <command> [options]

Find, restart and clean up the handoffs /handoff-worktree made (their manifests live in
<agent dir>/handoff-worktree/manifests; agent dir: $PI_CODING_AGENT_DIR, else ~/.pi/agent).

Commands:
  list [--repo DIR] [--all] [--json]      every handoff, judged against what really exists
  inspect <id> [--json]                   one handoff in detail
  relaunch <id> [--no-focus]              start its Pi again (never while one runs on its session),
                                          reopening its window if it was closed
  remove <id> [--force] [--delete-branch] close its window and delete its worktree; refuses
                                          uncommitted files or unmerged commits unless --force,
                                          listing them first; the branch is kept unless
                                          --delete-branch and it is merged
  prune [--dry-run]                       drop only what loses nothing: git's entries for vanished
                                          worktrees, handoffs whose worktree is gone and whose
                                          branch is merged or gone, handoffs that failed early

Exit status: 0 done, 1 refused or failed (the reason is on stderr), 2 bad input.`;

type CommandName = "list" | "inspect" | "relaunch" | "remove" | "prune";
const COMMANDS: readonly CommandName[] = ["list", "inspect", "relaunch", "remove", "prune"];

type OptionSpecs = NonNullable<ParseArgsConfig["options"]>;

const OPTIONS: Readonly<Record<CommandName, OptionSpecs>> = {
  list: { repo: { type: "string" }, json: { type: "boolean" }, all: { type: "boolean" } },
  inspect: { json: { type: "boolean" } },
  relaunch: { "no-focus": { type: "boolean" } },
  remove: { force: { type: "boolean" }, "delete-branch": { type: "boolean" } },
  prune: { "dry-run": { type: "boolean" } },
};

const TAKES_ID: Readonly<Record<CommandName, boolean>> = { list: false, inspect: true, relaunch: true, remove: true, prune: false };

class UsageError extends Error {}

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const refusal = unsupportedPlatform(io.platform);
  if (refusal !== undefined) {
    io.stderr(`pi-handoff: ${refusal}\n`);
    return EXIT_REFUSED;
  }
  try {
    return await dispatch(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`pi-handoff: ${error.message}\n`);
      return EXIT_USAGE;
    }
    io.stderr(`pi-handoff: ${oneSentence(error)}\n`);
    return EXIT_REFUSED;
  }
}

async function dispatch(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    if (first === undefined) {
      io.stderr(`${USAGE}\n`);
      return EXIT_USAGE;
    }
    io.stdout(`${USAGE}\n`);
    return EXIT_OK;
  }
  const command = COMMANDS.find((name) => name === first);
  if (command === undefined) {
    throw new UsageError(`${JSON.stringify(first)} is not a command; the commands are ${COMMANDS.join(", ")} (see pi-handoff --help).`);
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(`${USAGE}\n`);
    return EXIT_OK;
  }
  const parsed = parseCommandArgs(command, rest);
  const deps = makeDeps(io);

  switch (command) {
    case "list":
      return list(deps, io, parsed.values);
    case "inspect":
      return inspect(deps, io, requireId(command, parsed.positionals), parsed.values.json === true);
    case "relaunch":
      return relaunch(deps, io, requireId(command, parsed.positionals), parsed.values["no-focus"] !== true);
    case "remove":
      return remove(deps, io, requireId(command, parsed.positionals), {
        force: parsed.values.force === true,
        deleteBranch: parsed.values["delete-branch"] === true,
      });
    case "prune":
      return prune(deps, io, parsed.values["dry-run"] === true);
  }
}

interface ParsedCommand {
  values: Record<string, string | boolean | Array<string | boolean> | undefined>;
  positionals: string[];
}

function parseCommandArgs(command: CommandName, args: readonly string[]): ParsedCommand {
  let parsed: ParsedCommand;
  try {
    parsed = parseArgs({ args: [...args], options: OPTIONS[command], allowPositionals: true, strict: true });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = errorMessage(error);
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const option = /'([^']+)'/.exec(message)?.[1] ?? "?";
      throw new UsageError(`Unknown option ${JSON.stringify(option)} for pi-handoff ${command} (see pi-handoff --help).`);
    }
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      const option = /'(--?[\w-]+)/.exec(message)?.[1] ?? "an option";
      throw new UsageError(
        /argument missing/.test(message)
          ? `Option ${option} of pi-handoff ${command} needs a value (see pi-handoff --help).`
          : `Option ${option} of pi-handoff ${command} takes no value (see pi-handoff --help).`,
      );
    }
    throw new UsageError(`Could not read the arguments of pi-handoff ${command}: ${oneSentence(error)}`);
  }
  const limit = TAKES_ID[command] ? 1 : 0;
  if (parsed.positionals.length > limit) {
    const extra = parsed.positionals.slice(limit).join(" ");
    throw new UsageError(`pi-handoff ${command} does not take ${JSON.stringify(extra)} (see pi-handoff --help).`);
  }
  return parsed;
}

function requireId(command: CommandName, positionals: readonly string[]): string {
  const id = positionals[0];
  if (id === undefined) throw new UsageError(`pi-handoff ${command} needs a handoff id (pi-handoff list shows them).`);
  if (!ID_PATTERN.test(id)) throw new UsageError(`${JSON.stringify(id)} is not a handoff id (pi-handoff list shows them).`);
  return id;
}

type CliDeps = RecoveryDeps;

function makeDeps(io: CliIo): CliDeps {
  return createRecoveryDeps(io.env, io.now);
}

async function list(deps: CliDeps, io: CliIo, values: ParsedCommand["values"]): Promise<number> {
  let repoCommonDir: string | undefined;
  if (typeof values.repo === "string") {
    const repo = await deps.git.findRepository(values.repo);
    if (repo === undefined) throw new UsageError(`${values.repo} is not inside a git repository.`);
    repoCommonDir = repo.commonDir;
  }
  const inventory = await buildInventory(deps, {
    ...(repoCommonDir === undefined ? {} : { repoCommonDir }),
    includeRemoved: values.all === true,
  });
  if (values.json === true) io.stdout(`${JSON.stringify(InventoryReportSchema.parse(inventory), null, 2)}\n`);
  else io.stdout(`${formatInventory(inventory)}\n`);
  return EXIT_OK;
}

async function inspect(deps: CliDeps, io: CliIo, id: string, json: boolean): Promise<number> {
  const inspected = await inspectHandoff(deps, id);
  if (inspected.code === "not_found") throw new UsageError(inspected.message);
  if (inspected.code === "invalid") {
    io.stderr(`pi-handoff: ${inspected.message}\n`);
    return EXIT_REFUSED;
  }
  if (json) {
    const report = InspectReportSchema.parse({ version: RECOVERY_JSON_VERSION, handoff: inspected.report, manifest: inspected.manifest });
    io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    io.stdout(`${formatReport(inspected.report)}\n`);
  }
  return EXIT_OK;
}

async function relaunch(deps: CliDeps, io: CliIo, id: string, focus: boolean): Promise<number> {
  const outcome = await relaunchHandoff(
    {
      ...deps,
      piCommand: findPiCommand(deps.env, io.execPath),
      sleep: (ms) => sleep(ms),
      progress: (step, text) => io.stderr(`${step}: ${text}\n`),
      timeouts: launchTimeoutsFromEnv(deps.env),
    },
    id,
    { focus },
  );
  if (outcome.code === "refused" && outcome.reason === "not_found") throw new UsageError(outcome.message);
  if (outcome.code === "running") {
    io.stdout(`${outcome.message}\n`);
    return EXIT_OK;
  }
  io.stderr(`pi-handoff: ${outcome.message}\n`);
  return EXIT_REFUSED;
}

async function remove(deps: CliDeps, io: CliIo, id: string, options: { force: boolean; deleteBranch: boolean }): Promise<number> {
  const outcome = await removeHandoff(deps, id, options, (plan) => {
    io.stdout(`${describeRemovalPlan(plan).join("\n")}\n`);
  });
  if (outcome.code === "refused" && outcome.reason === "not_found") throw new UsageError(outcome.message);
  if (outcome.code === "removed") {
    io.stdout(`${outcome.message}\n`);
    return EXIT_OK;
  }
  io.stderr(`pi-handoff: ${outcome.message}\n`);
  return EXIT_REFUSED;
}

async function prune(deps: CliDeps, io: CliIo, dryRun: boolean): Promise<number> {
  const { actions, problems } = await planPrune(deps);
  for (const problem of problems) io.stderr(`pi-handoff: ${problem}\n`);
  if (actions.length === 0) {
    io.stdout("Nothing to prune.\n");
    return problems.length > 0 ? EXIT_REFUSED : EXIT_OK;
  }
  io.stdout(`${dryRun ? "Would do (dry run, nothing changed):" : "Pruning:"}\n`);
  for (const action of actions) io.stdout(`${describePruneAction(action).map((line) => `  ${line}`).join("\n")}\n`);
  if (dryRun) return problems.length > 0 ? EXIT_REFUSED : EXIT_OK;
  const results = await executePrune(deps, actions);
  let failed = problems.length > 0;
  for (const result of results) {
    if (!result.ok) {
      failed = true;
      io.stderr(`pi-handoff: ${result.message}\n`);
    }
  }
  io.stdout(`Done: ${results.filter((result) => result.ok).length} of ${results.length} action(s).\n`);
  return failed ? EXIT_REFUSED : EXIT_OK;
}

function oneSentence(error: unknown): string {
  const text = errorMessage(error);
  return text.replace(/\s+/g, " ").trim().replace(/[.\s]*$/, ".");
}
