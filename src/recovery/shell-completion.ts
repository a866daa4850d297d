/**
 * Shell completion for `pi-handoff` (bash, zsh, fish): `pi-handoff completion <shell>` prints a
 * script generated from the one command grammar (command-line.ts), so a command or an option
 * added there is completed without touching this file; `pi-handoff completion handoffs` prints
 * the names the scripts offer for a handoff.
 *
 * Invariants:
 * - Pure: the grammar in, script text out. The scripts hold the commands and options as data;
 *   the only things they run are the `pi-handoff` being completed (`completion handoffs`, which
 *   only lists the manifest store) and, for `--into`, `git for-each-ref` in the current directory.
 * - Every option that takes a value has a kind of value here (`VALUE_KINDS`); a test checks that
 *   the grammar has no other.
 * - Names are data, never code: the scripts quote what they embed, and the shells' own word lists
 *   (`compgen -W`, `compadd`, fish's `-a`) receive handoff names as words.
 */
import { LAND_STRATEGIES } from "../manifest/schema.ts";
import type { ListEntry } from "../manifest/store.ts";
import { RECOVERY_COMMANDS, RECOVERY_OPTIONS, TAKES_HANDOFF, type RecoveryCommand } from "./command-line.ts";
import { COMMAND_DESCRIPTIONS } from "./completions.ts";

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

/** What each value-taking option takes, so a script completes it: a directory, a strategy, a local branch. */
export const VALUE_KINDS: Readonly<Record<string, "directory" | "strategy" | "branch" | "text">> = {
  repo: "directory",
  strategy: "strategy",
  into: "branch",
  // Free text (a commit message): nothing to offer, but the word after it is not a handoff name.
  message: "text",
};

/** The name `pi-handoff completion handoffs` prints: branch and id of every handoff not removed, newest first. */
export function handoffNames(entries: readonly ListEntry[]): string[] {
  const names: string[] = [];
  for (const entry of [...entries].reverse()) {
    if (!entry.ok || entry.manifest.state === "removed") continue;
    names.push(entry.manifest.branch, entry.id);
  }
  return [...new Set(names)];
}

interface CommandShape {
  command: RecoveryCommand;
  flags: string[];
  valued: string[];
  takesHandoff: boolean;
}

function shapes(): CommandShape[] {
  return RECOVERY_COMMANDS.map((command) => {
    const options = Object.entries(RECOVERY_OPTIONS[command]);
    return {
      command,
      flags: options.map(([name]) => `--${name}`),
      valued: options.filter(([, spec]) => spec.type === "string").map(([name]) => `--${name}`),
      takesHandoff: TAKES_HANDOFF[command],
    };
  });
}

/** Every value-taking option of the grammar (for the scripts, and the test that each has a kind). */
export function valuedOptions(): string[] {
  return [...new Set(shapes().flatMap((shape) => shape.valued))].map((option) => option.slice(2));
}

const single = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
const BRANCHES_COMMAND = "git for-each-ref --format='%(refname:short)' refs/heads 2>/dev/null";

export function completionScript(shell: Shell): string {
  switch (shell) {
    case "bash":
      return bashScript();
    case "zsh":
      return zshScript();
    case "fish":
      return fishScript();
  }
}

function bashScript(): string {
  const all = shapes();
  const valued = valuedOptions().map((name) => `--${name}`);
  const lines = [
    "# pi-handoff completion for bash. Load it with: source <(pi-handoff completion bash)",
    "_pi_handoff() {",
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
    "  COMPREPLY=()",
    "  if [[ $COMP_CWORD -eq 1 ]]; then",
    `    COMPREPLY=($(compgen -W ${single([...RECOVERY_COMMANDS, "completion", "--help", "--version"].join(" "))} -- "$cur"))`,
    "    return",
    "  fi",
    '  case "$prev" in',
    ...Object.entries(VALUE_KINDS).map(([name, kind]) => {
      const reply =
        kind === "directory"
          ? 'COMPREPLY=($(compgen -d -- "$cur"))'
          : kind === "strategy"
            ? `COMPREPLY=($(compgen -W ${single(LAND_STRATEGIES.join(" "))} -- "$cur"))`
            : kind === "branch"
              ? `COMPREPLY=($(compgen -W "$(${BRANCHES_COMMAND})" -- "$cur"))`
              : undefined;
      return reply === undefined ? `    --${name}) return ;;` : `    --${name}) ${reply}; return ;;`;
    }),
    "  esac",
    "  local options handoff=0",
    '  case "${COMP_WORDS[1]}" in',
    ...all.map(
      (shape) =>
        `    ${shape.command}) options=${single(shape.flags.join(" "))}; handoff=${shape.takesHandoff ? 1 : 0} ;;`,
    ),
    `    completion) [[ $COMP_CWORD -eq 2 ]] && COMPREPLY=($(compgen -W ${single(SHELLS.join(" "))} -- "$cur")); return ;;`,
    "    *) return ;;",
    "  esac",
    '  if [[ "$cur" == -* ]]; then',
    '    COMPREPLY=($(compgen -W "$options --help" -- "$cur"))',
    "    return",
    "  fi",
    "  [[ $handoff -eq 1 ]] || return",
    "  local i named=0",
    "  for ((i = 2; i < COMP_CWORD; i++)); do",
    '    case "${COMP_WORDS[i]}" in',
    `      ${valued.join("|")}) ((i++)) ;;`,
    "      -*) ;;",
    "      *) named=1 ;;",
    "    esac",
    "  done",
    '  [[ $named -eq 0 ]] && COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completion handoffs 2>/dev/null)" -- "$cur"))',
    "}",
    "complete -F _pi_handoff pi-handoff",
    "",
  ];
  return lines.join("\n");
}

function zshScript(): string {
  const all = shapes();
  const valued = valuedOptions().map((name) => `--${name}`);
  const lines = [
    "#compdef pi-handoff",
    "# pi-handoff completion for zsh. Load it with: source <(pi-handoff completion zsh)",
    "# (after compinit), or save it as _pi-handoff in a directory of $fpath.",
    "_pi_handoff() {",
    "  local cur=${words[CURRENT]} prev=${words[CURRENT-1]}",
    "  if (( CURRENT == 2 )); then",
    `    compadd -- ${[...RECOVERY_COMMANDS, "completion", "--help", "--version"].join(" ")}`,
    "    return",
    "  fi",
    "  case $prev in",
    ...Object.entries(VALUE_KINDS).map(([name, kind]) => {
      const reply =
        kind === "directory"
          ? "_files -/"
          : kind === "strategy"
            ? `compadd -- ${LAND_STRATEGIES.join(" ")}`
            : kind === "branch"
              ? `compadd -- \${(f)"$(${BRANCHES_COMMAND})"}`
              : undefined;
      return reply === undefined ? `    --${name}) return ;;` : `    --${name}) ${reply}; return ;;`;
    }),
    "  esac",
    "  local -a options",
    "  local handoff=0",
    "  case ${words[2]} in",
    ...all.map(
      (shape) => `    ${shape.command}) options=(${shape.flags.join(" ")}); handoff=${shape.takesHandoff ? 1 : 0} ;;`,
    ),
    `    completion) (( CURRENT == 3 )) && compadd -- ${SHELLS.join(" ")}; return ;;`,
    "    *) return ;;",
    "  esac",
    "  if [[ $cur == -* ]]; then",
    "    compadd -- $options --help",
    "    return",
    "  fi",
    "  (( handoff )) || return",
    "  local i named=0",
    "  for (( i = 3; i < CURRENT; i++ )); do",
    "    case ${words[i]} in",
    `      ${valued.join("|")}) (( i++ )) ;;`,
    "      -*) ;;",
    "      *) named=1 ;;",
    "    esac",
    "  done",
    '  (( named )) || compadd -- ${(f)"$(${words[1]} completion handoffs 2>/dev/null)"}',
    "}",
    "(( $+functions[compdef] )) && compdef _pi_handoff pi-handoff",
    "",
  ];
  return lines.join("\n");
}

function fishScript(): string {
  const all = shapes();
  const commands = [...RECOVERY_COMMANDS, "completion"].join(" ");
  const lines = [
    "# pi-handoff completion for fish. Load it with: pi-handoff completion fish | source",
    "# (or save it as ~/.config/fish/completions/pi-handoff.fish).",
    "complete -c pi-handoff -f",
    `complete -c pi-handoff -n ${single(`not __fish_seen_subcommand_from ${commands}`)} -l help -d 'show the usage'`,
    `complete -c pi-handoff -n ${single(`not __fish_seen_subcommand_from ${commands}`)} -l version -d 'print the version'`,
    ...RECOVERY_COMMANDS.map(
      (command) =>
        `complete -c pi-handoff -n ${single(`not __fish_seen_subcommand_from ${commands}`)} -a ${command} -d ${single(COMMAND_DESCRIPTIONS[command])}`,
    ),
    `complete -c pi-handoff -n ${single(`not __fish_seen_subcommand_from ${commands}`)} -a completion -d 'print a shell completion script'`,
    `complete -c pi-handoff -n '__fish_seen_subcommand_from completion' -a ${single(SHELLS.join(" "))}`,
  ];
  for (const shape of all) {
    const when = single(`__fish_seen_subcommand_from ${shape.command}`);
    for (const flag of shape.flags) {
      const name = flag.slice(2);
      const kind = VALUE_KINDS[name];
      const value =
        kind === undefined
          ? ""
          : kind === "directory"
            ? " -x -a '(__fish_complete_directories)'"
            : kind === "strategy"
              ? ` -x -a ${single(LAND_STRATEGIES.join(" "))}`
              : kind === "branch"
                ? ` -x -a ${single(`(${BRANCHES_COMMAND})`)}`
                : " -x";
      lines.push(`complete -c pi-handoff -n ${when} -l ${name}${value}`);
    }
    if (shape.takesHandoff)
      lines.push(`complete -c pi-handoff -n ${when} -a '(pi-handoff completion handoffs 2>/dev/null)'`);
  }
  lines.push("");
  return lines.join("\n");
}
