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
 *   pi-handoff completion bash|zsh|fish
 *   pi-handoff --version
 *
 * Lives in src/ (not scripts/) because it ships in the package: `bin/pi-handoff.mjs` loads it.
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
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { unsupportedPlatform } from "../process/platform.ts";
import { errorSentence } from "../errors.ts";
import { counted, terminalSafe } from "../text.ts";
import type { HandoffStep, Manifest } from "../manifest/schema.ts";
import {
  CLI_ONLY_COMMANDS,
  parseRecoveryCommand,
  type ParsedRecoveryCommand,
  type RecoveryCommand,
} from "./command-line.ts";
import type { RebaseRequest } from "../rebase/rebase.ts";
import type { RecoveryDeps } from "./deps.ts";
import type { LandRequest } from "../land/land.ts";
import type { LandGit } from "../git/land.ts";
import type { RelaunchDeps } from "../relaunch/relaunch.ts";
import type { RelaunchAllScope } from "../relaunch/relaunch-all.ts";
import type { RemovalPlan, RemoveOptions } from "../remove/plan.ts";
import type { planPrune } from "../remove/prune.ts";
import type { TreeScope } from "../tree/tree.ts";

// Each command loads what it runs when it runs (`--help`, `--version` and the completion scripts
// load none of it; `list` neither landing nor removal): a new process starts for every command,
// and for every Tab of the shell completion.

export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Where relative paths given (`--repo .`) are taken from (default: this process's working directory). */
  cwd?: string;
  /** The Node that runs this CLI; a JavaScript Pi is started with it. */
  execPath: string;
  now?: () => Date;
  /** The system this runs on (tests pass another one); defaults to `process.platform`. */
  platform?: NodeJS.Platform;
  /** What the messages call this program (`/handoffs` when Pi runs the same commands). */
  program?: string;
  /** Where `program --help` is (default: `<program> --help`). */
  helpPointer?: string;
  /** How to start Pi on a relaunch (default: the Pi found on PATH, run with `execPath`). */
  piCommand?: readonly string[];
  /** Progress of a relaunch (default: `<step>: <text>` lines on stderr). */
  progress?: (step: HandoffStep, text: string) => void;
  /** The recovery dependencies (default: the real ones for `env`). */
  deps?: RecoveryDeps;
  /** The width of the terminal stdout is, when it is one (`list` fits it; `COLUMNS` in `env` wins). */
  columns?: number;
}

/**
 * How wide `list` may be: `COLUMNS` when set to a positive number (also in a pipe, as `ls` reads
 * it), else the terminal's width when stdout is one; undefined (no limit) in a pipe or a file.
 */
export function listWidth(io: Pick<CliIo, "env" | "columns">): number | undefined {
  const asked = io.env.COLUMNS?.trim() ?? "";
  if (/^[1-9][0-9]{0,5}$/.test(asked)) return Number.parseInt(asked, 10);
  return io.columns !== undefined && Number.isSafeInteger(io.columns) && io.columns > 0 ? io.columns : undefined;
}

export const USAGE = `Usage: pi-handoff <command> [options]

Find, restart and clean up the handoffs /handoff-worktree made (their manifests live in
<agent dir>/handoff-worktree/manifests; agent dir: $PI_CODING_AGENT_DIR, else ~/.pi/agent).
A <handoff> is its id, a unique start of its id, or its branch.

Commands:
  list [--repo DIR] [--all] [--json]      every handoff, judged against what really exists
  inspect <handoff> [--json]              one handoff in detail, its reserved ports tested
  env <handoff> [--json]                  its ports and variables as export lines:
                                          eval "$(pi-handoff env <handoff>)" in your own shell
  focus <handoff>                         switch to its window (tmux) or workspace (Herdr)
  relaunch <handoff> [--no-focus]         start its Pi again (never while one runs on its session),
                                          reopening its window if it was closed
  relaunch --all [--repo DIR | --all-repos]
                                          the same for every handoff of this repository (or of
                                          DIR's, or of every repository) whose Pi is gone, after
                                          a reboot: one line each (restored, already running,
                                          refused and why); exit 1 if any was not restored
  remove <handoff> [--force] [--delete-branch] [--dry-run]
                                          close its window and delete its worktree; refuses
                                          uncommitted files, unmerged commits, or a worktree it
                                          cannot check for a running Pi unless --force,
                                          listing them first; the branch is kept unless
                                          --delete-branch and it is merged; --dry-run only
                                          says what would be done
  forecast [--repo DIR] [--json]          for every live handoff: the files that would conflict
                                          landing it into its target now, and between it and each
                                          sibling (same repository and target), and how far the
                                          target moved past it; merges in git's object store only
  rebase <handoff> [--dry-run] [--no-verify]
                                          re-make the branch's commits on the tip of the branch it
                                          lands into, when that moved on: objects first, then the
                                          branch moved once, its worktree with it; refuses
                                          (changing nothing) while its Pi is in a turn, on
                                          uncommitted changes in the worktree and on conflicts;
                                          its Pi is told at its next idle point
  tree [<handoff> | <session file>] [--repo DIR] [--json]
                                          the handoff tree: each conversation that handed off
                                          (this repository's, or DIR's; or from one handoff or
                                          session), its handoffs under it, theirs under them;
                                          each with its state as list says it, commits ahead and
                                          behind, landed or not, the tokens and cost its session
                                          added itself (after its fork point) and its runs', and
                                          its whole subtree's total
  prune [--dry-run] [--merged]            drop only what loses nothing: git's entries for its own
                                          vanished worktrees, handoffs whose worktree is gone and
                                          whose branch is merged or gone, handoffs that failed
                                          early; --merged also retires every handoff whose branch
                                          is merged (landed, rebased, squashed) and deletes the
                                          branches it created, listing each first
  land <handoff> [--into BRANCH] [--strategy ff|rebase|merge|squash] [--message SUBJECT]
       [--dry-run] [--remove] [--delete-branch] [--no-verify]
                                          bring the branch's commits into the branch the handoff
                                          started from (or --into); fast-forward by default, else
                                          name a strategy; refuses (changing nothing) while its Pi
                                          is in a turn, on uncommitted changes in the worktree or
                                          in the target's files (ignored ones too), on conflicts,
                                          while the target is being rebased, and when a merge,
                                          squash or rebase would bypass the repository's commit
                                          hooks (unless --no-verify); -m/--message sets the
                                          subject of a merge or squash commit; --dry-run says
                                          what it would do; --remove then removes the worktree
                                          (branch kept unless --delete-branch)
  land --all [--repo DIR] | land <handoff> <handoff>... [--dry-run] [--keep-rebased]
       [--approve-repo-code] [--no-verify]
                                          the merge queue: every ready child of the repository
                                          (or these), in an order from the forecast, each rebased
                                          onto its target's tip in its worktree, checked there
                                          (settings: check) and fast-forwarded; one that
                                          conflicts or fails its check is sent back as it was
                                          (--keep-rebased: rebased) and told why; exit 1 when
                                          one was sent back; --dry-run prints the order, the
                                          strategy and the check; a repository's check runs only
                                          once approved (--approve-repo-code)

  completion bash|zsh|fish                print a completion script for that shell; load it with
                                          source <(pi-handoff completion bash) (zsh: the same, after
                                          compinit; fish: pi-handoff completion fish | source)

Options: --help, --version.
Exit status: 0 done, 1 refused or failed (the reason is on stderr), 2 bad input.`;

/** Bad input (exit 2); `command` makes the prefix `pi-handoff <command>:`. */
class UsageError extends Error {
  readonly command: RecoveryCommand | undefined;
  constructor(message: string, command?: RecoveryCommand) {
    super(message);
    this.command = command;
  }
}

/** A refusal or failure (exit 1) of a command, already worded. */
class Refusal extends Error {
  readonly command: RecoveryCommand;
  constructor(message: string, command: RecoveryCommand) {
    super(message);
    this.command = command;
  }
}

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

function prefix(io: Pick<CliIo, "program">, command: RecoveryCommand | undefined): string {
  const program = io.program ?? "pi-handoff";
  return command === undefined ? `${program}: ` : `${program} ${command}: `;
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
      return list(deps, io, parsed.repo, flags.all === true, flags.json === true);
    case "inspect":
      return inspect(deps, io, await handoff(), flags.json === true);
    case "env":
      return env(deps, io, await handoff(), flags.json === true);
    case "focus":
      return focus(deps, io, await handoff());
    case "relaunch":
      if (flags.all === true) return relaunchEvery(deps, io, parsed.repo, flags["all-repos"] === true);
      return relaunch(deps, io, await handoff(), flags["no-focus"] !== true);
    case "remove":
      return remove(deps, io, await handoff(), {
        force: flags.force === true,
        deleteBranch: flags["delete-branch"] === true,
        dryRun: flags["dry-run"] === true,
      });
    case "prune":
      return prune(deps, io, flags["dry-run"] === true, flags.merged === true);
    case "forecast":
      return forecast(deps, io, parsed.repo, flags.json === true);
    case "tree":
      return tree(deps, io, parsed.handoff, parsed.repo, flags.json === true);
    case "rebase":
      return rebase(io, await handoff(), {
        dryRun: flags["dry-run"] === true,
        ...(flags["no-verify"] === true ? { noVerify: true } : {}),
      });
    case "land": {
      if (flags.all === true || parsed.handoffs !== undefined) return landQueue(deps, io, parsed);
      // The options are checked before the handoff is looked up: bad input is said first.
      const request = (await import("../land/land.ts")).landRequestFrom(parsed);
      if (!request.ok) throw new UsageError(request.message, "land");
      return land(io, await handoff(), request.request);
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

/** The manifests of one repository (`--repo`), or all; a bad directory is bad input. */
async function manifestsOf(deps: CliDeps, command: RecoveryCommand, repoDir: string | undefined): Promise<Manifest[]> {
  let commonDir: string | undefined;
  if (repoDir !== undefined) {
    const repo = await deps.git.findRepository(repoDir);
    if (repo === undefined) throw new UsageError(`${repoDir} is not inside a git repository.`, command);
    commonDir = repo.commonDir;
  }
  return (await deps.store.list()).flatMap((entry) =>
    entry.ok && (commonDir === undefined || entry.manifest.repo.commonDir === commonDir) ? [entry.manifest] : [],
  );
}

async function forecast(deps: CliDeps, io: CliIo, repoDir: string | undefined, json: boolean): Promise<number> {
  const manifests = await manifestsOf(deps, "forecast", repoDir);
  const [{ forecastHandoffs, formatForecast }, { ForecastReportSchema }] = await Promise.all([
    import("../forecast/forecast.ts"),
    import("../inventory/report-schema.ts"),
  ]);
  const result = await forecastHandoffs({ git: deps.git, landGit: await landGitFor(deps.env) }, manifests);
  for (const problem of result.problems) io.stderr(`${prefix(io, "forecast")}${problem}\n`);
  if (json) io.stdout(`${JSON.stringify(ForecastReportSchema.parse(result.entries), null, 2)}\n`);
  else io.stdout(`${formatForecast(result)}\n`);
  return EXIT_OK;
}

/**
 * `tree`: from a session file (a path to one), a handoff (named as everywhere), or the top-level
 * conversations of this repository (`--repo DIR`; outside a repository, of every one).
 */
async function tree(
  deps: CliDeps,
  io: CliIo,
  name: string | undefined,
  repoDir: string | undefined,
  json: boolean,
): Promise<number> {
  const cwd = io.cwd ?? process.cwd();
  if (name !== undefined && repoDir !== undefined)
    throw new UsageError("Give a handoff, a session file or --repo DIR, not two of them.", "tree");
  const [{ buildTree, formatTree }, { TreeReportSchema }, { SessionUsageCache }, { RunCostReader }, { isFile }] =
    await Promise.all([
      import("../tree/tree.ts"),
      import("../tree/tree-report.ts"),
      import("../session/usage.ts"),
      import("../tree/run-costs.ts"),
      import("../fs/probe.ts"),
    ]);
  let scope: TreeScope;
  const asFile = name === undefined ? undefined : resolve(cwd, name);
  if (name !== undefined && asFile !== undefined && name.endsWith(".jsonl") && (await isFile(asFile)))
    scope = { code: "session", file: asFile };
  else if (name !== undefined) scope = { code: "handoff", id: await resolveId(deps, "tree", name) };
  else {
    const dir = resolve(cwd, repoDir ?? ".");
    const repo = await deps.git.findRepository(dir);
    if (repo === undefined && repoDir !== undefined)
      throw new UsageError(`${dir} is not inside a git repository.`, "tree");
    scope = repo === undefined ? { code: "repo" } : { code: "repo", commonDir: repo.commonDir };
  }
  const usage = SessionUsageCache.forAgentDir(deps.agentDir);
  const built = await buildTree({ ...deps, usage, runs: new RunCostReader(deps.env) }, scope);
  await usage.save();
  if (built.code === "not_found") throw new UsageError(built.message, "tree");
  if (json) io.stdout(`${JSON.stringify(TreeReportSchema.parse(built.report), null, 2)}\n`);
  else io.stdout(`${formatTree(built.report)}\n`);
  return EXIT_OK;
}

/** The landing's git (merge-tree and friends), with its longer per-call bound. */
async function landGitFor(env: NodeJS.ProcessEnv): Promise<LandGit> {
  const [{ LandGit }, { gitCallMs }, { LAND_GIT_TIMEOUT_MS }] = await Promise.all([
    import("../git/land.ts"),
    import("../config/waits.ts"),
    import("./deps.ts"),
  ]);
  return new LandGit({ env, timeoutMs: gitCallMs(env, LAND_GIT_TIMEOUT_MS) });
}

async function rebase(io: CliIo, id: string, request: RebaseRequest): Promise<number> {
  const [{ rebaseHandoff }, { createRebaseDeps }] = await Promise.all([
    import("../rebase/rebase.ts"),
    import("./deps.ts"),
  ]);
  const outcome = await rebaseHandoff(createRebaseDeps(io.env, io.now), id, request, io.now);
  if (!outcome.ok)
    throw outcome.code === "not_found"
      ? new UsageError(outcome.message, "rebase")
      : new Refusal(outcome.message, "rebase");
  io.stdout(`${outcome.message}\n`);
  return EXIT_OK;
}

async function land(io: CliIo, id: string, request: LandRequest): Promise<number> {
  const [{ landHandoff, removalFailedAfterLanding }, { createLandDeps }] = await Promise.all([
    import("../land/land.ts"),
    import("./deps.ts"),
  ]);
  const outcome = await landHandoff(createLandDeps(io.env, io.now), id, request, io.now);
  if (!outcome.ok)
    throw outcome.code === "not_found" ? new UsageError(outcome.message, "land") : new Refusal(outcome.message, "land");
  io.stdout(`${outcome.message}\n`);
  return removalFailedAfterLanding(outcome) ? EXIT_REFUSED : EXIT_OK;
}

/**
 * `land --all` / `land <handoff> <handoff>...`: the queue (queue.ts) of one repository, the check
 * from the settings (a repository's only once approved: `--approve-repo-code`). Exit 1 when a
 * child was sent back (or the queue is busy); waiting children do not count.
 */
async function landQueue(deps: CliDeps, io: CliIo, parsed: ParsedRecoveryCommand): Promise<number> {
  const ids: string[] = [];
  for (const name of parsed.handoffs ?? []) ids.push(await resolveId(deps, "land", name));
  let commonDir: string;
  let mainCheckout: string;
  if (ids.length > 0) {
    const manifests = await Promise.all(ids.map((id) => deps.store.read(id)));
    const repos = new Set(manifests.map((read) => (read.ok ? read.manifest.repo.commonDir : "")));
    const first = manifests[0];
    if (first === undefined || !first.ok || repos.size !== 1)
      throw new UsageError("The queue lands the handoffs of one repository at a time; these are of several.", "land");
    commonDir = first.manifest.repo.commonDir;
    mainCheckout = first.manifest.repo.root;
  } else {
    const dir = resolve(io.cwd ?? process.cwd(), parsed.repo ?? ".");
    const repo = await deps.git.findRepository(dir);
    if (repo === undefined)
      throw new UsageError(
        `${dir} is not inside a git repository${parsed.repo === undefined ? ": run it in one, or give --repo DIR" : ""}.`,
        "land",
      );
    commonDir = repo.commonDir;
    mainCheckout = repo.mainCheckout;
  }
  const [{ loadHandoffConfig }, approval, { DEFAULT_CHECK_TIMEOUT_MS }, queue, { createQueueDeps }] = await Promise.all(
    [
      import("../config/load.ts"),
      import("../config/post-create-approval.ts"),
      import("../config/schema.ts"),
      import("../queue/queue.ts"),
      import("./deps.ts"),
    ],
  );
  // Outside Pi there is no project trust to ask: the repository's check runs only once approved.
  const settings = await loadHandoffConfig({ cwd: mainCheckout, agentDir: deps.agentDir, projectTrusted: true });
  if (!settings.ok) throw new Refusal(settings.message, "land");
  const dryRun = parsed.flags["dry-run"] === true;
  const approved = await approval.approvedCheck({
    agentDir: deps.agentDir,
    config: settings.config,
    repoNeedsApproval: settings.repoNeedsApproval,
    // A dry run approves nothing: it shows the check, and says whether it still needs approving.
    approvedByFlag: !dryRun && parsed.flags["approve-repo-code"] === true,
  });
  const command = settings.config.check;
  const check =
    command === undefined
      ? undefined
      : { command, timeoutMs: settings.config.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS, env: io.env };
  const queueDeps = createQueueDeps(io.env, io.now);
  const request = {
    repoCommonDir: commonDir,
    ...(ids.length === 0 ? {} : { ids }),
    keepRebased: parsed.flags["keep-rebased"] === true,
    ...(parsed.flags["no-verify"] === true ? { noVerify: true } : {}),
  };
  if (dryRun) {
    const plan = await queue.planQueue(queueDeps, request);
    const shown = command === undefined ? "" : approval.checkText(command);
    const lines = queue.describeQueuePlan(plan, check, shown);
    if (!approved.ok) lines.push(approved.message.replace(/; nothing was landed\.$/, "."));
    io.stdout(`${lines.join("\n")}\n`);
    return EXIT_OK;
  }
  if (!approved.ok) throw new Refusal(approved.message, "land");
  const outcome = await queue.runQueue(queueDeps, { ...request, ...(check === undefined ? {} : { check }) }, io.now);
  if (!outcome.ok) throw new Refusal(outcome.message, "land");
  io.stdout(`${queue.describeQueueReport(outcome.report).join("\n")}\n`);
  return outcome.report.sentBack.length === 0 ? EXIT_OK : EXIT_REFUSED;
}

/** The id of the handoff `name` designates (an id, a unique start of one, or a branch). */
async function resolveId(deps: CliDeps, command: RecoveryCommand, name: string): Promise<string> {
  const { resolveHandoffName } = await import("../inventory/resolve.ts");
  const resolved = await resolveHandoffName(deps.store, name);
  if (!resolved.ok) throw new UsageError(resolved.message, command);
  return resolved.id;
}

/** This package's version, from its own package.json (shipped beside src/). */
async function packageVersion(): Promise<string> {
  const text = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
  const { z } = await import("zod");
  return z.object({ version: z.string() }).parse(JSON.parse(text)).version;
}

type CliDeps = RecoveryDeps;
/** What `prune` found to do, and what it could not check or leaves alone (remove/prune.ts `planPrune`). */
type PrunePlan = Awaited<ReturnType<typeof planPrune>>;

async function makeDeps(io: CliIo): Promise<CliDeps> {
  return io.deps ?? (await import("./deps.ts")).createRecoveryDeps(io.env, io.now);
}

async function list(
  deps: CliDeps,
  io: CliIo,
  repoDir: string | undefined,
  all: boolean,
  json: boolean,
): Promise<number> {
  let repoCommonDir: string | undefined;
  let repoRoot: string | undefined;
  if (repoDir !== undefined) {
    // Named as an absolute path: `.` in a message says nothing once read elsewhere.
    const dir = resolve(io.cwd ?? process.cwd(), repoDir);
    const repo = await deps.git.findRepository(dir);
    if (repo === undefined) throw new UsageError(`${dir} is not inside a git repository.`, "list");
    repoCommonDir = repo.commonDir;
    repoRoot = repo.mainCheckout;
  }
  const [{ buildInventory }, { InventoryReportSchema }] = await Promise.all([
    import("../inventory/inventory.ts"),
    import("../inventory/report-schema.ts"),
  ]);
  // Read once: the inventory and the forecast's column judge the same manifests.
  const entries = await deps.store.list();
  const inventory = await buildInventory(deps, {
    ...(repoCommonDir === undefined ? {} : { repoCommonDir }),
    includeRemoved: all,
    entries,
  });
  if (json) io.stdout(`${JSON.stringify(InventoryReportSchema.parse(inventory), null, 2)}\n`);
  else {
    // The forecast's short column: how far each target moved past its handoff, and what would conflict.
    const listed = new Set(inventory.handoffs.map((handoff) => handoff.id));
    const manifests = entries.flatMap((entry) => (entry.ok && listed.has(entry.id) ? [entry.manifest] : []));
    const [{ forecastHandoffs, forecastMark }, { formatInventory }] = await Promise.all([
      import("../forecast/forecast.ts"),
      import("../inventory/format.ts"),
    ]);
    const forecasts = await forecastHandoffs({ git: deps.git, landGit: await landGitFor(deps.env) }, manifests);
    const marks = new Map(forecasts.entries.map((entry) => [entry.id, forecastMark(entry) || "ok"]));
    const width = listWidth(io);
    io.stdout(
      `${formatInventory(inventory, {
        ...(repoRoot === undefined ? {} : { repo: repoRoot }),
        forecast: marks,
        ...(width === undefined ? {} : { width }),
      })}\n`,
    );
    // What killed processes left in the store is prune's to explain and sweep; say it is there.
    const leftovers = (await deps.store.leftovers()).length;
    if (leftovers > 0)
      io.stdout(
        `${counted(leftovers, "other file")} in the manifest store; pi-handoff prune --dry-run says what each is.\n`,
      );
  }
  return EXIT_OK;
}

async function inspect(deps: CliDeps, io: CliIo, id: string, json: boolean): Promise<number> {
  const [
    { inspectHandoff, lastChildReport },
    { stepTimesOf },
    { InspectReportSchema, RECOVERY_JSON_VERSION },
    { formatReport },
  ] = await Promise.all([
    import("../inventory/inventory.ts"),
    import("../inventory/step-times.ts"),
    import("../inventory/report-schema.ts"),
    import("../inventory/format.ts"),
  ]);
  const found = await inspectHandoff(deps, id, { checkPorts: true });
  if (found.code === "not_found") throw new UsageError(found.message, "inspect");
  if (found.code === "invalid") throw new Refusal(found.message, "inspect");
  // Only what would run is suggested: a checkout no removal (nor reopening) may reach is said instead.
  const { withoutBlockedActions } = await import("../remove/plan.ts");
  const { report: judged, blocked } = await withoutBlockedActions(deps, found.manifest, found.report);
  const inspected = { ...found, report: judged };
  const lastReport = await lastChildReport(deps.agentDir, id);
  const stepTimes = stepTimesOf(inspected.manifest);
  if (json) {
    const report = InspectReportSchema.parse({
      version: RECOVERY_JSON_VERSION,
      handoff: inspected.report,
      manifest: inspected.manifest,
      ...(lastReport === undefined ? {} : { lastReport }),
      ...(stepTimes === undefined ? {} : { stepTimes }),
    });
    io.stdout(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const task = inspected.manifest.task;
    // The next steps as the user's shell runs them (a checkout without `pi-handoff` on PATH).
    const { recoveryCommand } = await import("../child/pi-command.ts");
    io.stdout(
      `${formatReport(inspected.report, Date.now(), {
        cli: recoveryCommand(io.env),
        ...(task === undefined ? {} : { task }),
        ...(blocked === undefined ? {} : { blocked }),
        ...(lastReport === undefined ? {} : { lastReport }),
        ...(stepTimes === undefined ? {} : { stepTimes }),
      })}\n`,
    );
  }
  return EXIT_OK;
}

async function env(deps: CliDeps, io: CliIo, id: string, json: boolean): Promise<number> {
  const [{ handoffEnvironment, nothingToExport }, { EnvReportSchema }] = await Promise.all([
    import("../inventory/env.ts"),
    import("../inventory/report-schema.ts"),
  ]);
  const found = await handoffEnvironment(deps.store, id);
  if (found.code === "not_found") throw new UsageError(found.message, "env");
  if (found.code !== "found") throw new Refusal(found.message, "env");
  if (json) io.stdout(`${JSON.stringify(EnvReportSchema.parse(found.report), null, 2)}\n`);
  else if (found.lines.length > 0) io.stdout(`${found.lines.join("\n")}\n`);
  else io.stderr(`${prefix(io, "env")}${nothingToExport(id)}\n`);
  return EXIT_OK;
}

async function relaunchDeps(deps: CliDeps, io: CliIo): Promise<RelaunchDeps> {
  const [{ findPiCommand }, { launchTimeoutsFromEnv }] = await Promise.all([
    import("../child/pi-command.ts"),
    import("../child/timeouts.ts"),
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
async function relaunchEvery(
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
  const { formatRelaunchAll, relaunchAll } = await import("../relaunch/relaunch-all.ts");
  const { recoveryCommand } = await import("../child/pi-command.ts");
  const result = await relaunchAll(await relaunchDeps(deps, io), scope);
  io.stdout(`${formatRelaunchAll(result, recoveryCommand(io.env)).join("\n")}\n`);
  return result.ok ? EXIT_OK : EXIT_REFUSED;
}

async function relaunch(deps: CliDeps, io: CliIo, id: string, focus: boolean): Promise<number> {
  const { relaunchHandoff } = await import("../relaunch/relaunch.ts");
  const outcome = await relaunchHandoff(await relaunchDeps(deps, io), id, { focus });
  return finish(io, "relaunch", outcome.message, {
    done: outcome.code === "running",
    notFound: outcome.code === "refused" && outcome.reason === "not_found",
  });
}

async function focus(deps: CliDeps, io: CliIo, id: string): Promise<number> {
  const { focusHandoff } = await import("../relaunch/focus.ts");
  const outcome = await focusHandoff(deps, id);
  return finish(io, "focus", outcome.message, {
    done: outcome.ok,
    notFound: !outcome.ok && outcome.code === "not_found",
  });
}

async function remove(
  deps: CliDeps,
  io: CliIo,
  id: string,
  options: RemoveOptions & { dryRun: boolean },
): Promise<number> {
  const [{ planRemoval }, { describeRemovalPlan }, { removeHandoff }] = await Promise.all([
    import("../remove/plan.ts"),
    import("../remove/words.ts"),
    import("../remove/remove.ts"),
  ]);
  const printPlan = (plan: RemovalPlan, proceeding: boolean): void =>
    io.stdout(`${describeRemovalPlan(plan, proceeding ? "will" : "would").join("\n")}\n`);
  if (options.dryRun) {
    const planned = await planRemoval(deps, id, options);
    if (planned.plan !== undefined) printPlan(planned.plan, false);
    if (planned.code === "refused") {
      if (planned.reason === "not_found") throw new UsageError(planned.message, "remove");
      throw new Refusal(`Dry run: ${planned.message}`, "remove");
    }
    io.stdout("Dry run: nothing was removed.\n");
    return EXIT_OK;
  }
  const outcome = await removeHandoff(deps, id, options, printPlan);
  return finish(io, "remove", outcome.message, {
    done: outcome.code === "removed",
    notFound: outcome.code === "refused" && outcome.reason === "not_found",
  });
}

/**
 * The end of a command on one handoff: done prints its message (exit 0); an unknown handoff is
 * bad input (exit 2); anything else is a refusal or failure (exit 1).
 */
function finish(
  io: CliIo,
  command: RecoveryCommand,
  message: string,
  outcome: { done: boolean; notFound: boolean },
): number {
  if (outcome.notFound) throw new UsageError(message, command);
  if (!outcome.done) throw new Refusal(message, command);
  io.stdout(`${message}\n`);
  return EXIT_OK;
}

async function prune(deps: CliDeps, io: CliIo, dryRun: boolean, merged: boolean): Promise<number> {
  const { planPrune } = await import("../remove/prune.ts");
  return carryOutPrune(deps, io, await planPrune(deps, { merged }), dryRun);
}

/**
 * What `prune` prints of a plan and, unless a dry run, carries out exactly that plan's actions
 * (each re-checked as it acts), with its results; the exit status. `/handoffs` runs the plan it asked about.
 */
export async function carryOutPrune(
  deps: CliDeps,
  io: Pick<CliIo, "stdout" | "stderr" | "program">,
  { actions, problems, notes }: PrunePlan,
  dryRun: boolean,
): Promise<number> {
  const [{ describePruneAction }, { executePrune }] = await Promise.all([
    import("../remove/words.ts"),
    import("../remove/prune.ts"),
  ]);
  for (const problem of problems) io.stderr(`${prefix(io, "prune")}${problem}\n`);
  for (const note of notes) io.stdout(`${note}\n`);
  if (actions.length === 0) {
    io.stdout("Nothing to prune.\n");
    return problems.length > 0 ? EXIT_REFUSED : EXIT_OK;
  }
  io.stdout(`${dryRun ? "Would do (dry run, nothing changed):" : "Pruning:"}\n`);
  for (const action of actions)
    io.stdout(
      `${describePruneAction(action)
        .map((line) => `  ${line}`)
        .join("\n")}\n`,
    );
  if (dryRun) return problems.length > 0 ? EXIT_REFUSED : EXIT_OK;
  const results = await executePrune(deps, actions);
  let failed = problems.length > 0;
  for (const result of results) {
    if (!result.ok) {
      failed = true;
      io.stderr(`${prefix(io, "prune")}${result.message}\n`);
    } else if (result.note !== undefined) io.stdout(`${result.note}\n`);
  }
  io.stdout(`Done: ${results.filter((result) => result.ok).length} of ${counted(results.length, "action")}.\n`);
  return failed ? EXIT_REFUSED : EXIT_OK;
}
