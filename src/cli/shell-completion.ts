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
 * - Names are data, never code: a branch or a handoff can be named `feat/$(rm -rf ~)` (git accepts
 *   it, and it can arrive from any remote). The scripts quote what they embed (`QUOTE_FOR`, one
 *   function per shell); what they read at Tab (branches, handoff names) is never expanded: bash
 *   reads it line by line into an array, compares it with the typed word as a string and offers it
 *   quoted for where it is inserted (never `compgen -W`, which expands each word; never `eval`);
 *   zsh splits it by lines into an array for `compadd` (no `-Q`: zsh quotes what it inserts); fish
 *   takes a command substitution's lines as they are and escapes what it inserts.
 */
import { LAND_STRATEGIES } from "../manifest/schema.ts";
import type { ListEntry } from "../manifest/store.ts";
import {
  CLI_ONLY_COMMANDS,
  RECOVERY_COMMANDS,
  RECOVERY_OPTIONS,
  TAKES_HANDOFF,
  type RecoveryCommand,
} from "./command-line.ts";
import { COMMAND_DESCRIPTIONS } from "./completions.ts";
import { shQuote } from "../process/sh-quote.ts";

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

/**
 * The name `pi-handoff completion handoffs` prints: branch and id of every handoff not removed,
 * newest first. A branch that starts with `-` is offered by its id alone: inserted bare, the
 * command line would read it as options.
 */
export function handoffNames(entries: readonly ListEntry[]): string[] {
  const names: string[] = [];
  for (const entry of [...entries].reverse()) {
    if (!entry.ok || entry.manifest.state === "removed") continue;
    if (!entry.manifest.branch.startsWith("-")) names.push(entry.manifest.branch);
    names.push(entry.id);
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

/** Quotes a word for the script of one shell, so the script holds it as data (bash and zsh: process/sh-quote.ts). */
export const QUOTE_FOR: Readonly<Record<Shell, (word: string) => string>> = {
  bash: shQuote,
  zsh: shQuote,
  // fish's single quotes also end at a backslash-escaped quote and read `\\` as one backslash.
  fish: (word) => `'${word.replace(/[\\']/g, "\\$&")}'`,
};

const BRANCHES_COMMAND = "git for-each-ref --format='%(refname:short)' refs/heads";

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

const FIRST_WORDS = [...RECOVERY_COMMANDS, ...CLI_ONLY_COMMANDS, "--help", "--version"];

/**
 * bash: candidates are read one per line into an array (never `compgen -W`, which expands each
 * word), kept when they start with the typed word (compared as a string, its quoting removed), and
 * offered `printf %q`-quoted, so readline inserts a word the shell reads back as the name.
 */
function bashScript(): string {
  const q = QUOTE_FOR.bash;
  const words = (list: readonly string[]): string => list.map(q).join(" ");
  const valued = valuedOptions().map((name) => `--${name}`);
  const lines = [
    "# pi-handoff completion for bash. Load it with: source <(pi-handoff completion bash)",
    "# A name is data here: it is compared and quoted, never expanded or run.",
    "# Offers each argument that starts with the typed word (compared as a string), quoted for where",
    "# it goes: printf %q outside quotes (and = : which readline breaks words at), or the rest of the",
    "# name escaped for the quote the user opened (readline replaces only the text after that quote).",
    "_pi_handoff_offer() {",
    "  local candidate quoted",
    '  for candidate in "$@"; do',
    '    [[ -n $candidate && $candidate == "$_pi_handoff_typed"* ]] || continue',
    "    case $_pi_handoff_quote in",
    `      "'") quoted=\${candidate:_pi_handoff_opened}; quoted=\${quoted//"'"/"'\\''"} ;;`,
    `      '"') quoted=\${candidate:_pi_handoff_opened}; quoted=\${quoted//\\\\/\\\\\\\\}; quoted=\${quoted//\\"/\\\\\\"}; quoted=\${quoted//\\$/\\\\\\$}; quoted=\${quoted//\\\`/\\\\\\\`} ;;`,
    '      *) printf -v quoted %q "$candidate"; quoted=${quoted//=/\\\\=}; quoted=${quoted//:/\\\\:} ;;',
    "    esac",
    '    COMPREPLY+=("$quoted")',
    "  done",
    "}",
    "# The lines a command prints, into the array found: each line one word, nothing expanded.",
    "_pi_handoff_lines() {",
    "  local line",
    "  found=()",
    '  while IFS= read -r line; do found+=("$line"); done < <("$@" 2>/dev/null)',
    "}",
    "# The word being completed with its quoting removed, by hand (backslash, single and double quotes),",
    "# and the quote still open at its end, if any, with how much of the word came before it.",
    "_pi_handoff_dequote() {",
    "  local word=$1 char i",
    "  _pi_handoff_typed= _pi_handoff_quote= _pi_handoff_opened=0",
    "  for ((i = 0; i < ${#word}; i++)); do",
    "    char=${word:i:1}",
    `    if [[ $_pi_handoff_quote == "'" ]]; then`,
    `      if [[ $char == "'" ]]; then _pi_handoff_quote=; else _pi_handoff_typed+=$char; fi`,
    `    elif [[ $_pi_handoff_quote == '"' ]]; then`,
    `      if [[ $char == '"' ]]; then _pi_handoff_quote=`,
    "      elif [[ $char == '\\' && ${word:i+1:1} == [\\\"\\$\\`\\\\] ]]; then _pi_handoff_typed+=${word:i+1:1}; ((++i))",
    "      else _pi_handoff_typed+=$char; fi",
    `    elif [[ $char == "'" || $char == '"' ]]; then _pi_handoff_quote=$char _pi_handoff_opened=\${#_pi_handoff_typed}`,
    "    elif [[ $char == '\\' ]]; then _pi_handoff_typed+=${word:i+1:1}; ((++i))",
    "    else _pi_handoff_typed+=$char; fi",
    "  done",
    "}",
    "_pi_handoff() {",
    '  local prev="${COMP_WORDS[COMP_CWORD-1]}" _pi_handoff_typed _pi_handoff_quote _pi_handoff_opened',
    "  local -a found",
    "  COMPREPLY=()",
    '  _pi_handoff_dequote "${COMP_WORDS[COMP_CWORD]}"',
    "  if [[ $COMP_CWORD -eq 1 ]]; then",
    `    _pi_handoff_offer ${words(FIRST_WORDS)}`,
    "    return",
    "  fi",
    '  case "$prev" in',
    ...Object.entries(VALUE_KINDS).map(([name, kind]) => {
      const reply =
        kind === "directory"
          ? 'compopt -o filenames 2>/dev/null; _pi_handoff_lines compgen -d -- "$_pi_handoff_typed"; COMPREPLY=("${found[@]}")'
          : kind === "strategy"
            ? `_pi_handoff_offer ${words(LAND_STRATEGIES)}`
            : kind === "branch"
              ? `_pi_handoff_lines ${BRANCHES_COMMAND}; _pi_handoff_offer "\${found[@]}"`
              : undefined;
      return reply === undefined ? `    --${name}) return ;;` : `    --${name}) ${reply}; return ;;`;
    }),
    "  esac",
    "  local -a options",
    "  local handoff=0",
    '  case "${COMP_WORDS[1]}" in',
    ...shapes().map(
      (shape) => `    ${shape.command}) options=(${words(shape.flags)}); handoff=${shape.takesHandoff ? 1 : 0} ;;`,
    ),
    `    completion) [[ $COMP_CWORD -eq 2 ]] && _pi_handoff_offer ${words(SHELLS)}; return ;;`,
    "    *) return ;;",
    "  esac",
    '  if [[ "$_pi_handoff_typed" == -* ]]; then',
    '    _pi_handoff_offer "${options[@]}" --help',
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
    "  [[ $named -eq 0 ]] || return",
    '  _pi_handoff_lines "${COMP_WORDS[0]}" completion handoffs',
    '  _pi_handoff_offer "${found[@]}"',
    "}",
    "complete -F _pi_handoff pi-handoff",
    "",
  ];
  return lines.join("\n");
}

/**
 * zsh: candidates are split into an array by lines (`"${(@f)...}"`, quoted: no further expansion
 * whatever the user's options, which `emulate -L zsh` resets anyway), empty lines dropped, and
 * given to `compadd` without `-Q`, so zsh itself matches them against the typed word and quotes
 * the one it inserts.
 */
function zshScript(): string {
  const q = QUOTE_FOR.zsh;
  const words = (list: readonly string[]): string => list.map(q).join(" ");
  const valued = valuedOptions().map((name) => `--${name}`);
  const lines = [
    "#compdef pi-handoff",
    "# pi-handoff completion for zsh. Load it with: source <(pi-handoff completion zsh)",
    "# (after compinit), or save it as _pi-handoff in a directory of $fpath.",
    "# A name is data here: compadd gets it as one word and quotes it when it is inserted.",
    "_pi_handoff() {",
    "  # zsh's own options here: the user's GLOB_SUBST would glob a name (a glob qualifier runs code),",
    "  # SH_WORD_SPLIT would split one, KSH_ARRAYS would shift the words.",
    "  emulate -L zsh",
    "  local cur=${words[CURRENT]} prev=${words[CURRENT-1]}",
    "  local -a found",
    "  if (( CURRENT == 2 )); then",
    `    compadd -- ${words(FIRST_WORDS)}`,
    "    return",
    "  fi",
    "  case $prev in",
    ...Object.entries(VALUE_KINDS).map(([name, kind]) => {
      const reply =
        kind === "directory"
          ? "_files -/"
          : kind === "strategy"
            ? `compadd -- ${words(LAND_STRATEGIES)}`
            : kind === "branch"
              ? `found=("\${(@f)$(${BRANCHES_COMMAND} 2>/dev/null)}"); compadd -- "\${(@)found:#}"`
              : undefined;
      return reply === undefined ? `    --${name}) return ;;` : `    --${name}) ${reply}; return ;;`;
    }),
    "  esac",
    "  local -a options",
    "  local handoff=0",
    "  case ${words[2]} in",
    ...shapes().map(
      (shape) => `    ${shape.command}) options=(${words(shape.flags)}); handoff=${shape.takesHandoff ? 1 : 0} ;;`,
    ),
    `    completion) (( CURRENT == 3 )) && compadd -- ${words(SHELLS)}; return ;;`,
    "    *) return ;;",
    "  esac",
    "  if [[ $cur == -* ]]; then",
    '    compadd -- "${options[@]}" --help',
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
    "  (( named )) && return",
    '  found=("${(@f)$("${words[1]}" completion handoffs 2>/dev/null)}")',
    '  compadd -- "${(@)found:#}"',
    "}",
    "(( $+functions[compdef] )) && compdef _pi_handoff pi-handoff",
    "",
  ];
  return lines.join("\n");
}

/**
 * fish: a command substitution's lines are candidates as they are (fish expands nothing in its
 * output), and fish escapes the one it inserts.
 */
function fishScript(): string {
  const q = QUOTE_FOR.fish;
  const commands = [...RECOVERY_COMMANDS, ...CLI_ONLY_COMMANDS].join(" ");
  const first = q(`not __fish_seen_subcommand_from ${commands}`);
  const lines = [
    "# pi-handoff completion for fish. Load it with: pi-handoff completion fish | source",
    "# (or save it as ~/.config/fish/completions/pi-handoff.fish).",
    "# A name is data here: fish offers a command's output lines as they are and escapes what it inserts.",
    "complete -c pi-handoff -f",
    `complete -c pi-handoff -n ${first} -l help -d ${q("show the usage")}`,
    `complete -c pi-handoff -n ${first} -l version -d ${q("print the version")}`,
    ...RECOVERY_COMMANDS.map(
      (command) => `complete -c pi-handoff -n ${first} -a ${q(command)} -d ${q(COMMAND_DESCRIPTIONS[command])}`,
    ),
    `complete -c pi-handoff -n ${first} -a completion -d ${q("print a shell completion script")}`,
    `complete -c pi-handoff -n ${q("__fish_seen_subcommand_from completion")} -a ${q(SHELLS.join(" "))}`,
  ];
  for (const shape of shapes()) {
    const when = q(`__fish_seen_subcommand_from ${shape.command}`);
    for (const flag of shape.flags) {
      const name = flag.slice(2);
      const kind = VALUE_KINDS[name];
      const value =
        kind === undefined
          ? ""
          : kind === "directory"
            ? ` -x -a ${q("(__fish_complete_directories)")}`
            : kind === "strategy"
              ? ` -x -a ${q(LAND_STRATEGIES.join(" "))}`
              : kind === "branch"
                ? ` -x -a ${q(`(${BRANCHES_COMMAND} 2>/dev/null)`)}`
                : " -x";
      lines.push(`complete -c pi-handoff -n ${when} -l ${name}${value}`);
    }
    if (shape.takesHandoff)
      lines.push(`complete -c pi-handoff -n ${when} -a ${q("(pi-handoff completion handoffs 2>/dev/null)")}`);
  }
  lines.push("");
  return lines.join("\n");
}
