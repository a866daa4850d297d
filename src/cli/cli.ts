/**
 * `pi-handoff`: list, inspect, relaunch, remove and prune handoffs from a shell.
 *
 *   pi-handoff list [--repo DIR] [--all] [--json]
 *   pi-handoff inspect <handoff> [--json]
 *   pi-handoff env <handoff> [--json]
 *   pi-handoff focus <handoff>
 *   pi-handoff relaunch <handoff> [--no-focus]
 *   pi-handoff relaunch --all [--repo DIR | --all-repos]
 *   pi-handoff remove <handoff> [--force] [--delete-branch] [--dry-run]
 *   pi-handoff prune [--dry-run] [--merged]
 *   pi-handoff forecast [--repo DIR] [--json]
 *   pi-handoff rebase <handoff> [--dry-run] [--no-verify]
 *   pi-handoff tree [<handoff> | <session file>] [--repo DIR] [--json]
 *   pi-handoff land <handoff> [--into BRANCH] [--strategy ff|rebase|merge|squash] [--message SUBJECT] [--dry-run] [--remove] [--delete-branch] [--no-verify]
 *   pi-handoff land --all [--repo DIR] | land <handoff> <handoff>... [--dry-run] [--keep-rebased] [--approve-repo-code] [--no-verify]
 *   pi-handoff land --all --status [--repo DIR] [--json]
 *   pi-handoff completion bash|zsh|fish
 *   pi-handoff --version
 *
 * Lives in src/ (not scripts/) because it ships in the package: `bin/pi-handoff.mjs` loads it.
 * This module is the entry and the dispatch: it parses the command line (command-line.ts), turns
 * what a command throws into one prefixed sentence and an exit code, and runs the command from
 * verbs/ (read.ts: list, inspect, env, forecast, tree; relaunch.ts: relaunch, focus; remove.ts:
 * remove, prune; land.ts: rebase, land, the queue); io.ts holds what they share, usage.ts `--help`.
 *
 * Invariants:
 * - Exit codes: 0 done; 1 refused or failed (one sentence on stderr saying why); 2 bad input (one
 *   sentence on stderr: an unknown command or option, a missing, unknown or ambiguous handoff, a
 *   bad directory). Each sentence is prefixed once, `pi-handoff <command>: `.
 * - A handoff is named by its id, a unique start of it, or its branch (resolve.ts).
 * - `--json` output is validated against the published schema (report-schema.ts) before it is printed.
 * - Every outside call has a timeout (git per call, tmux per call, the launch's shell and confirm waits).
 * - What a removal loses is printed before anything is removed.
 * - Output never carries what a terminal would act on (`terminalSafe`): escapes from a commit
 *   subject or a file name are shown escaped.
 * - The manifests are the agent dir's (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`), as in Pi.
 */
import { readFileSync } from "node:fs";
import { unsupportedPlatform } from "../process/platform.ts";
import { errorSentence } from "../errors.ts";
import { terminalSafe } from "../text.ts";
import { CLI_ONLY_COMMANDS, parseRecoveryCommand, type ParsedRecoveryCommand } from "./command-line.ts";
import {
  type CliDeps,
  type CliIo,
  EXIT_OK,
  EXIT_REFUSED,
  EXIT_USAGE,
  makeDeps,
  prefix,
  Refusal,
  resolveId,
  UsageError,
} from "./io.ts";
import { USAGE } from "./usage.ts";

export { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, type CliIo } from "./io.ts";

// Each command loads what it runs when it runs (`--help`, `--version` and the completion scripts
// load none of it; `list` neither landing nor removal): a new process starts for every command,
// and for every Tab of the shell completion. The commands live in verbs/, by job.

export async function main(argv: readonly string[], given: CliIo): Promise<number> {
  // Nothing a repository holds (a commit subject, a file name) reaches the terminal raw; JSON stays equal JSON.
  const io: CliIo = {
    ...given,
    stdout: (text) => given.stdout(terminalSafe(text)),
    stderr: (text) => given.stderr(terminalSafe(text)),
  };
  const refusal = unsupportedPlatform(io.platform);
  if (refusal !== undefined) {
    io.stderr(`${prefix(io, undefined)}${refusal}\n`);
    return EXIT_REFUSED;
  }
  try {
    return await dispatch(argv, io);
  } catch (error) {
    const command = error instanceof UsageError || error instanceof Refusal ? error.command : undefined;
    io.stderr(`${prefix(io, command)}${errorSentence(error)}\n`);
    return error instanceof UsageError ? EXIT_USAGE : EXIT_REFUSED;
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
  if (first === "--version") {
    io.stdout(`pi-handoff ${await packageVersion()}\n`);
    return EXIT_OK;
  }
  if (first === "completion") return completion(rest, io);
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(`${USAGE}\n`);
    return EXIT_OK;
  }
  const words = parseRecoveryCommand(argv, io.helpPointer ?? `${io.program ?? "pi-handoff"} --help`, CLI_ONLY_COMMANDS);
  if (!words.ok) throw new UsageError(words.message, words.command);
  const { command } = words.parsed;
  const problem = io.deps === undefined ? (await import("./deps.ts")).recoveryEnvProblem(io.env) : undefined;
  if (problem !== undefined) throw new Refusal(problem, command);
  const deps = await makeDeps(io);
  try {
    return await run(deps, io, words.parsed);
  } catch (error) {
    // Whatever fails inside a command is said under that command's name (`pi-handoff land: ...`).
    if (error instanceof UsageError || error instanceof Refusal) throw error;
    throw new Refusal(errorSentence(error), command);
  }
}

async function run(deps: CliDeps, io: CliIo, parsed: ParsedRecoveryCommand): Promise<number> {
  const { command, flags } = parsed;
  const handoff = async (): Promise<string> => resolveId(deps, command, parsed.handoff ?? "");

  switch (command) {
    case "list":
      return (await import("./verbs/read.ts")).list(deps, io, parsed.repo, flags.all === true, flags.json === true);
    case "inspect":
      return (await import("./verbs/read.ts")).inspect(deps, io, await handoff(), flags.json === true);
    case "env":
      return (await import("./verbs/read.ts")).env(deps, io, await handoff(), flags.json === true);
    case "forecast":
      return (await import("./verbs/read.ts")).forecast(deps, io, parsed.repo, flags.json === true);
    case "tree":
      return (await import("./verbs/read.ts")).tree(deps, io, parsed.handoff, parsed.repo, flags.json === true);
    case "focus":
      return (await import("./verbs/relaunch.ts")).focus(deps, io, await handoff());
    case "relaunch": {
      const verbs = await import("./verbs/relaunch.ts");
      if (flags.all === true) return verbs.relaunchEvery(deps, io, parsed.repo, flags["all-repos"] === true);
      return verbs.relaunch(deps, io, await handoff(), flags["no-focus"] !== true);
    }
    case "remove":
      return (await import("./verbs/remove.ts")).remove(deps, io, await handoff(), {
        force: flags.force === true,
        deleteBranch: flags["delete-branch"] === true,
        dryRun: flags["dry-run"] === true,
      });
    case "prune":
      return (await import("./verbs/remove.ts")).prune(deps, io, flags["dry-run"] === true, flags.merged === true);
    case "rebase":
      return (await import("./verbs/land.ts")).rebase(io, await handoff(), {
        dryRun: flags["dry-run"] === true,
        ...(flags["no-verify"] === true ? { noVerify: true } : {}),
      });
    case "land": {
      const verbs = await import("./verbs/land.ts");
      if (flags.all === true || parsed.handoffs !== undefined) return verbs.landQueue(deps, io, parsed);
      // The options are checked before the handoff is looked up: bad input is said first.
      const request = (await import("../land/land-words.ts")).landRequestFrom(parsed);
      if (!request.ok) throw new UsageError(request.message, "land");
      return verbs.land(io, await handoff(), request.request);
    }
  }
}

/** `completion <shell>` prints that shell's script; `completion handoffs`, the names the scripts offer (store only). */
async function completion(words: readonly string[], io: CliIo): Promise<number> {
  const [what, ...extra] = words;
  const { completionScript, handoffNames, SHELLS } = await import("./shell-completion.ts");
  if (extra.length > 0) throw new UsageError(`Unexpected ${JSON.stringify(extra.join(" "))} (see pi-handoff --help).`);
  const shell = SHELLS.find((name) => name === what);
  if (shell !== undefined) {
    io.stdout(completionScript(shell));
    return EXIT_OK;
  }
  if (what === "handoffs") {
    const names = handoffNames(await (await makeDeps(io)).store.list());
    io.stdout(names.length > 0 ? `${names.join("\n")}\n` : "");
    return EXIT_OK;
  }
  throw new UsageError(
    `completion takes one of ${SHELLS.join(", ")}, not ${JSON.stringify(what ?? "")} (see pi-handoff --help).`,
  );
}

/** This package's version, from its own package.json (shipped beside src/). */
async function packageVersion(): Promise<string> {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  const { z } = await import("zod");
  return z.object({ version: z.string() }).parse(JSON.parse(text)).version;
}
