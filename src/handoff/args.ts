/**
 * Parsing `/handoff-worktree <branch> [base] [--carry[=all]] [--existing] [--fetch] [--mux <terminal>]
 * [--no-focus] [--approve-repo-code] [-- task]`. `--approve-post-create` is the former name of
 * `--approve-repo-code`, still taken (it approved the env variables too, which its name hid).
 *
 * Invariants: pure; words are split as a shell user expects (quotes group and disappear, nothing
 * is expanded); the task after ` -- ` is kept verbatim (apart from trimming); every refusal
 * is one sentence that says what to type instead. A flag that is not given leaves its field out,
 * so "not asked" and "asked for the default" read the same everywhere. Anything dash-led that is
 * not an option (`-m`) is refused as an unknown option, never taken as a branch or a base.
 */
import { splitCommandLine, type Word } from "../command-line-words.ts";
import { isMuxKind, listMuxKinds, MUX_KINDS, type MuxKind } from "../manifest/locations.ts";
import { closestMatch } from "../text.ts";

export const HANDOFF_USAGE = `/handoff-worktree <branch> [base] [--carry[=all]] [--existing] [--fetch] [--mux ${MUX_KINDS.join("|")}] [--no-focus] [--approve-repo-code] [-- task]`;

/** What `/handoff-worktree --help` prints; the README's flags are checked against it. */
export const HANDOFF_HELP = [
  `Usage: ${HANDOFF_USAGE}`,
  "Creates a git worktree on a new branch, copies this conversation's active branch into a new session there,",
  "and starts a new Pi on it in its own terminal window. This session is left as it is.",
  "  <branch>        the new branch (must not exist yet; a configured branchPrefix is put in front)",
  "  [base]          what the branch starts from: a branch, tag or commit (default: HEAD)",
  "  --carry         bring this checkout's uncommitted changes to tracked files (staged and unstaged) along",
  "  --carry=all     the same, plus untracked files that git does not ignore",
  "  --existing      hand off into an existing local branch, checked out as it is (the base is ignored)",
  "  --fetch         fetch the base's remote branch first (with a timeout), so the base is current",
  `  --mux <kind>    ${listMuxKinds()} (default: the settings' mux, else detected from the environment)`,
  "  --no-focus      do not switch to the new window afterwards",
  "  --approve-repo-code  approve the code the repository's settings run, its postCreate commands and env",
  "                  variables, as they are now, without a dialog (print mode; also taken as --approve-post-create)",
  "  --help          show this help",
  "  -- <task>       what the new Pi should start on; without it, it waits for you",
  'Words are split as in a shell: quotes group and are removed ("feat/x" is feat/x); nothing is expanded, and the task is kept as typed.',
  "Settings: <agent dir>/handoff-worktree.json and, in a trusted project, .pi/handoff-worktree.json (see the README).",
].join("\n");

/** Every option `readWords` takes, for a "did you mean" when one is mistyped. */
const HANDOFF_OPTIONS: readonly string[] = [
  "--carry",
  "--existing",
  "--fetch",
  "--mux",
  "--no-focus",
  "--approve-repo-code",
  "--approve-post-create",
  "--help",
];

export interface HandoffArgs {
  branch: string;
  /** The base as typed; `HEAD` when none was given. */
  base: string;
  baseGiven: boolean;
  task?: string;
  mux?: MuxKind;
  focus: boolean;
  /** `--carry` (tracked changes) or `--carry=all` (plus untracked files); absent: nothing is carried. */
  carry?: CarryMode;
  /** `--existing`: the branch must exist; it is checked out as it is. */
  existing?: boolean;
  /** `--fetch`: fetch the base's remote branch before resolving the base. */
  fetch?: boolean;
  /** `--approve-repo-code` (or its former name): the repository's postCreate commands and env variables are approved as they are now. */
  approveRepoCode?: boolean;
}

export type CarryMode = "tracked" | "all";

export type ParsedHandoffArgs =
  | { ok: true; args: HandoffArgs }
  | { ok: true; help: true }
  | { ok: false; message: string };

export function parseHandoffArgs(raw: string): ParsedHandoffArgs {
  const split = splitCommandLine(raw);
  if (!split.ok) return { ok: false, message: split.message };
  const read = readWords(split.words);
  if (!read.ok || "help" in read) return read;
  const { flags, positional } = read;
  const task = split.rest;
  const [branch, base, ...extra] = positional;
  if (branch === undefined || branch === "") return { ok: false, message: `Name the new branch: ${HANDOFF_USAGE}.` };
  if (extra.length > 0) {
    return {
      ok: false,
      message: `Too many words before the task (${JSON.stringify(extra.join(" "))}); put the task after " -- ".`,
    };
  }
  return {
    ok: true,
    args: {
      branch,
      base: base ?? "HEAD",
      baseGiven: base !== undefined,
      ...(task !== undefined ? { task } : {}),
      ...(flags.mux !== undefined ? { mux: flags.mux } : {}),
      focus: flags.focus,
      ...(flags.carry !== undefined ? { carry: flags.carry } : {}),
      ...(flags.existing ? { existing: true } : {}),
      ...(flags.fetch ? { fetch: true } : {}),
      ...(flags.approveRepoCode ? { approveRepoCode: true } : {}),
    },
  };
}

/** The options as read, before the words before the task are known to be right. */
interface Flags {
  mux?: MuxKind;
  focus: boolean;
  carry?: CarryMode;
  existing: boolean;
  fetch: boolean;
  approveRepoCode: boolean;
}

/** Options and positional words (a quoted word is always positional); `--help` wins at once. */
function readWords(
  words: readonly Word[],
): { ok: true; flags: Flags; positional: string[] } | { ok: true; help: true } | { ok: false; message: string } {
  const positional: string[] = [];
  const flags: Flags = { focus: true, existing: false, fetch: false, approveRepoCode: false };
  for (let i = 0; i < words.length; i++) {
    const { text: word, quoted } = words[i] ?? { text: "", quoted: true };
    if (quoted) {
      positional.push(word);
    } else if (word === "--help" || word === "-h") {
      return { ok: true, help: true };
    } else if (word === "--no-focus") {
      flags.focus = false;
    } else if (word === "--carry" || word.startsWith("--carry=")) {
      const value = word === "--carry" ? "tracked" : word.slice("--carry=".length);
      if (value !== "tracked" && value !== "all") {
        return { ok: false, message: `--carry takes no value or =all, not ${JSON.stringify(value)}.` };
      }
      flags.carry = value;
    } else if (word === "--existing") {
      flags.existing = true;
    } else if (word === "--fetch") {
      flags.fetch = true;
    } else if (word === "--approve-repo-code" || word === "--approve-post-create") {
      flags.approveRepoCode = true;
    } else if (word === "--mux" || word.startsWith("--mux=")) {
      const value = word === "--mux" ? words[++i]?.text : word.slice("--mux=".length);
      if (value === undefined || !isMuxKind(value)) {
        return {
          ok: false,
          message: `--mux takes ${listMuxKinds()}, not ${value === undefined ? "nothing" : JSON.stringify(value)}.`,
        };
      }
      flags.mux = value;
    } else if (word.startsWith("-") && word !== "-") {
      // `-m tmux` is a mistyped option, not a branch or a base: a dash-led name would be refused by git anyway.
      const meant = closestMatch(word.replace(/=.*$/, ""), HANDOFF_OPTIONS);
      return {
        ok: false,
        message:
          meant === undefined
            ? `Unknown option ${JSON.stringify(word)}; usage: ${HANDOFF_USAGE}.`
            : `Unknown option ${JSON.stringify(word)}: did you mean ${meant} (usage: ${HANDOFF_USAGE})?`,
      };
    } else {
      positional.push(word);
    }
  }
  return { ok: true, flags, positional };
}
