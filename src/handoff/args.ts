/**
 * Parsing `/handoff-worktree <branch> [base] [--mux tmux|herdr] [--no-focus] [-- task]`.
 *
 * Invariants: pure; the task after ` -- ` is kept verbatim (apart from trimming); every refusal
 * is one sentence that says what to type instead.
 */
import type { MuxKind } from "../manifest/schema.ts";

export const HANDOFF_USAGE = "/handoff-worktree <branch> [base] [--mux tmux|herdr] [--no-focus] [-- task]";

/** What `/handoff-worktree --help` prints; the README's flags are checked against it. */
export const HANDOFF_HELP = [
  `Usage: ${HANDOFF_USAGE}`,
  "Creates a git worktree on a new branch, copies this conversation's active branch into a new session there,",
  "and starts a new Pi on it in its own terminal window. This session is left as it is.",
  "  <branch>        the new branch (must not exist yet)",
  "  [base]          what the branch starts from: a branch, tag or commit (default: HEAD)",
  "  --mux <kind>    tmux or herdr (default: detected from the environment)",
  "  --no-focus      do not switch to the new window afterwards",
  "  --help          show this help",
  "  -- <task>       what the new Pi should start on; without it, it waits for you",
].join("\n");

export interface HandoffArgs {
  branch: string;
  /** The base as typed; `HEAD` when none was given. */
  base: string;
  baseGiven: boolean;
  task?: string;
  mux?: MuxKind;
  focus: boolean;
}

export type ParsedHandoffArgs =
  | { ok: true; args: HandoffArgs }
  | { ok: true; help: true }
  | { ok: false; message: string };

/** Split at the first `--` that stands alone as a word; everything after it is the task. */
function splitTask(raw: string): { head: string; task?: string } {
  const match = /(^|\s)--(\s|$)/.exec(raw);
  if (!match) return { head: raw };
  const head = raw.slice(0, match.index);
  const task = raw.slice(match.index + match[0].length).trim();
  return task.length > 0 ? { head, task } : { head };
}

export function parseHandoffArgs(raw: string): ParsedHandoffArgs {
  const { head, task } = splitTask(raw);
  const words = head.trim().split(/\s+/).filter((word) => word.length > 0);
  const positional: string[] = [];
  let mux: MuxKind | undefined;
  let focus = true;
  for (let i = 0; i < words.length; i++) {
    const word = words[i] ?? "";
    if (word === "--help" || word === "-h") return { ok: true, help: true };
    if (word === "--no-focus") {
      focus = false;
    } else if (word === "--mux" || word.startsWith("--mux=")) {
      const value = word === "--mux" ? words[++i] : word.slice("--mux=".length);
      if (value !== "tmux" && value !== "herdr") {
        return { ok: false, message: `--mux takes tmux or herdr, not ${value === undefined ? "nothing" : JSON.stringify(value)}.` };
      }
      mux = value;
    } else if (word.startsWith("--")) {
      return { ok: false, message: `Unknown option ${JSON.stringify(word)}; usage: ${HANDOFF_USAGE}.` };
    } else {
      positional.push(word);
    }
  }
  const [branch, base, ...extra] = positional;
  if (branch === undefined) return { ok: false, message: `Name the new branch: ${HANDOFF_USAGE}.` };
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
      ...(mux !== undefined ? { mux } : {}),
      focus,
    },
  };
}
