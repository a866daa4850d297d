/**
 * The words of a recovery command (`list`, `inspect <handoff>`, ...): one grammar for the
 * `pi-handoff` CLI and for `/handoffs` inside Pi, so both take the same commands and options.
 *
 * Invariants:
 * - Pure: words in, a parsed command or one sentence out.
 * - Strict: an unknown option, an option missing its value and an extra word are each refused in
 *   one sentence; nothing dash-led is ever taken as a handoff's name.
 * - Messages do not name the program or the command: the caller puts its own prefix in front
 *   (`pi-handoff remove: ...`), so no message says it twice.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { errorClause } from "../errors.ts";
import { closestMatch } from "../text.ts";

export type RecoveryCommand =
  | "list"
  | "inspect"
  | "env"
  | "focus"
  | "relaunch"
  | "remove"
  | "prune"
  | "land"
  | "forecast"
  | "rebase"
  | "tree";
export const RECOVERY_COMMANDS: readonly RecoveryCommand[] = [
  "list",
  "inspect",
  "env",
  "focus",
  "relaunch",
  "remove",
  "prune",
  "land",
  "forecast",
  "rebase",
  "tree",
];

/** The commands `pi-handoff` takes besides the recovery ones (`/handoffs` has none of them). */
export const CLI_ONLY_COMMANDS: readonly string[] = ["completion"];

type OptionSpecs = NonNullable<ParseArgsConfig["options"]>;

/** The options each command takes (without their dashes), as `parseArgs` reads them; shell completion is generated from them too. */
export const RECOVERY_OPTIONS: Readonly<Record<RecoveryCommand, OptionSpecs>> = {
  list: { repo: { type: "string" }, json: { type: "boolean" }, all: { type: "boolean" } },
  inspect: { json: { type: "boolean" } },
  env: { json: { type: "boolean" } },
  focus: {},
  relaunch: {
    "no-focus": { type: "boolean" },
    all: { type: "boolean" },
    repo: { type: "string" },
    "all-repos": { type: "boolean" },
  },
  remove: { force: { type: "boolean" }, "delete-branch": { type: "boolean" }, "dry-run": { type: "boolean" } },
  prune: { "dry-run": { type: "boolean" }, merged: { type: "boolean" } },
  forecast: { repo: { type: "string" }, json: { type: "boolean" } },
  rebase: { "dry-run": { type: "boolean" }, "no-verify": { type: "boolean" } },
  tree: { repo: { type: "string" }, json: { type: "boolean" } },
  land: {
    into: { type: "string" },
    strategy: { type: "string" },
    "dry-run": { type: "boolean" },
    remove: { type: "boolean" },
    "delete-branch": { type: "boolean" },
    "no-verify": { type: "boolean" },
    message: { type: "string", short: "m" },
    // The queue (`land --all`, or several handoffs): queue/queue.ts.
    all: { type: "boolean" },
    repo: { type: "string" },
    "keep-rebased": { type: "boolean" },
    "approve-repo-code": { type: "boolean" },
    // `land --all --status [--json]`: the queue's current or last run, read only (queue/queue-status.ts).
    status: { type: "boolean" },
    json: { type: "boolean" },
  },
};

/** `land`'s options for one handoff only, and those for the queue only (`land --all`, or several handoffs). */
const LAND_ONE_ONLY = ["into", "strategy", "message", "remove", "delete-branch"] as const;
const LAND_QUEUE_ONLY = ["repo", "keep-rebased", "approve-repo-code"] as const;
/** What `land --all --status` does not take: it only reads. */
const LAND_NOT_WITH_STATUS = ["dry-run", "keep-rebased", "approve-repo-code", "no-verify"] as const;

export const TAKES_HANDOFF: Readonly<Record<RecoveryCommand, boolean>> = {
  list: false,
  inspect: true,
  env: true,
  focus: true,
  relaunch: true,
  remove: true,
  prune: false,
  land: true,
  forecast: false,
  rebase: true,
  // `tree` takes one, or none (the repository's whole tree): see `OPTIONAL_HANDOFF`.
  tree: true,
};

/** The commands whose handoff may be left out. */
const OPTIONAL_HANDOFF: ReadonlySet<RecoveryCommand> = new Set(["tree"]);

export interface ParsedRecoveryCommand {
  command: RecoveryCommand;
  /** The handoff named (an id, a unique start of one, or a branch), for the commands that take one. */
  handoff?: string;
  flags: Readonly<Record<string, boolean>>;
  repo?: string;
  /** `land --into <branch>` and `--strategy <name>` (checked by land/land.ts). */
  into?: string;
  strategy?: string;
  /** `land --message <subject>` (`-m`). */
  message?: string;
  /** `land <handoff> <handoff>...`: the handoffs the queue lands (with `--all`, none: every ready one). */
  handoffs?: string[];
}

export type RecoveryCommandParse =
  | { ok: true; parsed: ParsedRecoveryCommand }
  | { ok: false; command?: RecoveryCommand; message: string };

/**
 * `help` names where to look (`pi-handoff --help`, `/handoffs --help`) in each refusal; `otherCommands`,
 * the commands the caller takes itself (the CLI's `completion`), which a refusal names among the commands.
 */
export function parseRecoveryCommand(
  words: readonly string[],
  help: string,
  otherCommands: readonly string[] = [],
): RecoveryCommandParse {
  const [first, ...rest] = words;
  const command = RECOVERY_COMMANDS.find((name) => name === first);
  if (command === undefined) {
    const commands = [...RECOVERY_COMMANDS, ...otherCommands];
    const meant = first === undefined ? undefined : closestMatch(first, commands);
    return {
      ok: false,
      message:
        meant === undefined
          ? `${JSON.stringify(first ?? "")} is not a command; the commands are ${commands.join(", ")} (see ${help}).`
          : `${JSON.stringify(first ?? "")} is not a command: did you mean ${meant} (the commands are ${commands.join(", ")}; see ${help})?`,
    };
  }
  const refuse = (message: string): RecoveryCommandParse => ({ ok: false, command, message });
  let values: Record<string, string | boolean | Array<string | boolean> | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...rest],
      options: RECOVERY_OPTIONS[command],
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const message = errorClause(error);
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const option = /'([^']+)'/.exec(message)?.[1] ?? "?";
      const meant = closestMatch(
        option.replace(/=.*$/, ""),
        [...Object.keys(RECOVERY_OPTIONS[command]), "help"].map((name) => `--${name}`),
      );
      return refuse(
        meant === undefined
          ? `Unknown option ${JSON.stringify(option)} (see ${help}).`
          : `Unknown option ${JSON.stringify(option)}: did you mean ${meant} (see ${help})?`,
      );
    }
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
      const option = /'(--?[\w-]+)/.exec(message)?.[1] ?? "an option";
      return refuse(
        /argument missing|ambiguous/.test(message)
          ? `Option ${option} needs a value (see ${help}).`
          : `Option ${option} takes no value (see ${help}).`,
      );
    }
    return refuse(`Could not read the arguments: ${message} (see ${help}).`);
  }
  // `relaunch --all` names no handoff: it relaunches every one of a repository (or of all).
  const many = command === "relaunch" && values.all === true;
  if (command === "relaunch") {
    const scoped = values.repo !== undefined ? "--repo" : values["all-repos"] === true ? "--all-repos" : undefined;
    if (!many && scoped !== undefined)
      return refuse(
        `${scoped} goes with --all: relaunch --all ${scoped === "--repo" ? "--repo DIR" : "--all-repos"} (see ${help}).`,
      );
    if (values.repo !== undefined && values["all-repos"] === true)
      return refuse(`Give --repo DIR or --all-repos, not both (see ${help}).`);
    if (many && positionals.length > 0)
      return refuse(
        `Give a handoff or --all, not both: ${JSON.stringify(positionals.join(" "))} was given with --all (see ${help}).`,
      );
  }
  // `land --all` or `land <handoff> <handoff>...` is the queue: every ready one, or these, in turn.
  const queue = command === "land" && (values.all === true || positionals.length > 1);
  if (command === "land") {
    if (values.all === true && positionals.length > 0)
      return refuse(
        `Give handoffs or --all, not both: ${JSON.stringify(positionals.join(" "))} was given with --all (see ${help}).`,
      );
    if (values.json === true && values.status !== true)
      return refuse(`--json goes with --status: land --all --status --json (see ${help}).`);
    if (values.status === true && values.all !== true)
      return refuse(`--status goes with --all: land --all --status [--repo DIR] (see ${help}).`);
    const notWithStatus = LAND_NOT_WITH_STATUS.find((name) => values[name] !== undefined);
    if (values.status === true && notWithStatus !== undefined)
      return refuse(`--status only reads the queue's state; --${notWithStatus} does not go with it (see ${help}).`);
    const misplaced = (queue ? LAND_ONE_ONLY : LAND_QUEUE_ONLY).find((name) => values[name] !== undefined);
    if (misplaced !== undefined)
      return refuse(
        queue
          ? `--${misplaced} is for landing one handoff; the queue rebases each onto its target and fast-forwards it (see ${help}).`
          : `--${misplaced} goes with the queue: land --all, or land with several handoffs (see ${help}).`,
      );
  }
  const limit = queue ? positionals.length : TAKES_HANDOFF[command] ? 1 : 0;
  if (positionals.length > limit)
    return refuse(`Unexpected ${JSON.stringify(positionals.slice(limit).join(" "))} (see ${help}).`);
  const handoff = positionals[0];
  if (TAKES_HANDOFF[command] && handoff === undefined && !many && !queue && !OPTIONAL_HANDOFF.has(command)) {
    return refuse(
      "Name the handoff: its id, the start of its id, or its branch (pi-handoff list or /handoffs shows them).",
    );
  }
  const flags: Record<string, boolean> = {};
  for (const [name, value] of Object.entries(values)) if (value === true) flags[name] = true;
  return {
    ok: true,
    parsed: {
      command,
      ...(handoff === undefined ? {} : { handoff }),
      flags,
      ...(typeof values.repo === "string" ? { repo: values.repo } : {}),
      ...(typeof values.into === "string" ? { into: values.into } : {}),
      ...(typeof values.strategy === "string" ? { strategy: values.strategy } : {}),
      ...(typeof values.message === "string" ? { message: values.message } : {}),
      ...(queue && positionals.length > 0 ? { handoffs: positionals } : {}),
    },
  };
}
