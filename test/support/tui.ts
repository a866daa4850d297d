/**
 * Driving the real Pi TUI in a terminal pane, whatever holds the pane (tmux or the Herdr double):
 * the caller says how to read the screen, type text and press Enter. Also the parent conversation
 * the end-to-end tests hand off, with an abandoned branch.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { SessionManager, type FileEntry, type SessionEntry } from "@earendil-works/pi-coding-agent";
import type { TempRepo } from "./git-repo.ts";
import { FAUX_MODEL, onlySessionFile, runPiPrint, type PiSandbox } from "./pi.ts";
import type { HerdrServerBase } from "./herdr.ts";
import { waitFor, type PrivateTmux } from "./tmux.ts";

/** Pi's footer names the model; the typed command line shows it only after a slash. */
export const PI_READY = /(?<!\/)faux-1/;
/** The handoff's status line (or its final notice) on the screen: the command was taken. */
export const HANDOFF_STARTED = /^handoff(?::| \w+ \()|Handed off/m;

export const sha256OfFile = (file: string): string => createHash("sha256").update(readFileSync(file)).digest("hex");
export const entriesOnly = (entries: FileEntry[]): SessionEntry[] =>
  entries.filter((e): e is SessionEntry => e.type !== "session");

export function textOf(message: unknown): string {
  const content = (message as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part: { text?: string }) => part.text ?? "").join("");
  return "";
}

/**
 * A parent conversation with an abandoned branch: two real print-mode turns, then the active
 * branch moved back to the first answer and continued (as /tree does), so the second turn is
 * abandoned but still in the file.
 */
export function buildParentWithAbandonedBranch(
  sandbox: PiSandbox,
  repo: TempRepo,
): { file: string; abandonedIds: string[] } {
  runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"]);
  const file = onlySessionFile(sandbox, repo.root);
  runPiPrint(sandbox, repo.root, ["--session", file, "--model", FAUX_MODEL, "abandoned question"]);
  const manager = SessionManager.open(file);
  const entries = manager.getEntries();
  const firstAnswer = entries.find(
    (e) => e.type === "message" && textOf(e.message) === "faux reply to: first question",
  );
  const abandoned = entries.filter((e) => e.type === "message" && /abandoned question/.test(textOf(e.message)));
  if (
    abandoned.length !== 2 ||
    firstAnswer === undefined ||
    firstAnswer.type !== "message" ||
    firstAnswer.message.role !== "assistant"
  ) {
    throw new Error("The parent conversation did not come out as planned.");
  }
  manager.branch(firstAnswer.id);
  manager.appendMessage({ role: "user", content: [{ type: "text", text: "active question" }], timestamp: Date.now() });
  manager.appendMessage({
    ...firstAnswer.message,
    content: [{ type: "text", text: "faux reply to: active question" }],
    timestamp: Date.now(),
  });
  return { file, abandonedIds: abandoned.map((e) => e.id) };
}

/** How a test reaches one pane. */
export interface PaneDriver {
  name: string;
  read(): Promise<string>;
  type(text: string): Promise<void>;
  enter(): Promise<void>;
}

/** A pane of a private tmux server, as the helpers here drive it. */
export function tmuxPane(tmux: PrivateTmux, pane: string): PaneDriver {
  return {
    name: pane,
    read: () => tmux.capturePane(pane),
    type: async (text) => {
      await tmux.tmux(["send-keys", "-t", pane, "-l", text]);
    },
    enter: async () => {
      await tmux.tmux(["send-keys", "-t", pane, "Enter"]);
    },
  };
}

/** A Herdr pane (real or double), as the helpers here drive it: `pane read`, `send-text`, `send-keys`. */
export function herdrPane(herdr: HerdrServerBase, pane: string): PaneDriver {
  return {
    name: pane,
    read: () => herdr.read(pane),
    type: async (text) => {
      const typed = await herdr.herdr(["pane", "send-text", pane, text]);
      if (typed.exitCode !== 0) throw new Error(typed.stderr);
    },
    enter: async () => {
      await herdr.herdr(["pane", "send-keys", pane, "Enter"]);
    },
  };
}

/** Wait until the pane's screen matches; on timeout the error shows the screen. */
export async function waitForScreen(
  pane: PaneDriver,
  pattern: RegExp,
  description: string,
  timeoutMs = 30_000,
): Promise<string> {
  let last = "";
  try {
    return await waitFor(
      async () => {
        last = await pane.read();
        return pattern.test(last) ? last : undefined;
      },
      { timeoutMs, intervalMs: 100, description },
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\nScreen of ${pane.name}:\n${last}`);
  }
}

/**
 * Type a line into Pi's TUI and press Enter until `effect` shows on the screen. Pi draws its
 * editor before it accepts a submission, and ignores Enter on an empty editor, so pressing Enter
 * again until the line is taken is safe and avoids guessing a start-up delay.
 */
export async function submitLine(pane: PaneDriver, text: string, effect: RegExp, timeoutMs = 30_000): Promise<string> {
  await pane.type(text);
  const deadline = Date.now() + timeoutMs;
  let screen = "";
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    await pane.enter();
    const until = Date.now() + 2_000;
    while (Date.now() < until) {
      screen = await pane.read();
      if (effect.test(screen)) return screen;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(
    `Typing ${JSON.stringify(text)} into ${pane.name} did not show ${effect} within ${timeoutMs} ms. Screen:\n${screen}`,
  );
}
