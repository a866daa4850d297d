/**
 * Driving Pi's TUI through tmux, as the e2e tests do: type with `send-keys -l`, then press Enter
 * until the expected effect shows. Pi draws its editor before it accepts a submission and ignores
 * Enter on an empty editor, so pressing Enter again is safe and needs no guessed start-up delay.
 */
import { join } from "node:path";
import type { PrivateTmux } from "./private-tmux.ts";
import { DemoFailure, seconds, sleep, waitFor } from "./wait.ts";

export const FAUX_MODEL = "faux/faux-1";
const ENTER_EVERY_MS = 2_000;

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The shell line that replaces a pane's shell with the Pi TUI in `cwd`, this package loaded once. */
export function piTuiCommandLine(input: { cwd: string; projectRoot: string; piCli: string }): string {
  const words = [
    join(input.projectRoot, "node_modules", ".bin", "node"),
    input.piCli,
    "--model",
    FAUX_MODEL,
    "--extension",
    join(input.projectRoot, "pi-extension", "index.ts"),
  ];
  return `cd ${shellQuote(input.cwd)} && exec ${words.map(shellQuote).join(" ")}`;
}

export async function typeCommandLine(tmux: PrivateTmux, paneId: string, line: string): Promise<void> {
  await tmux.run(["send-keys", "-t", paneId, "-l", "--", line]);
  await tmux.run(["send-keys", "-t", paneId, "Enter"]);
}

/** Polls a pane until `matches(screen)`; returns that screen. */
export function waitForScreen(
  tmux: PrivateTmux,
  paneId: string,
  matches: (screen: string) => boolean,
  options: { timeoutMs: number; failure: string; signal: AbortSignal },
): Promise<string> {
  return waitFor(
    async () => {
      const screen = await tmux.capturePane(paneId);
      return matches(screen) ? screen : undefined;
    },
    { ...options, intervalMs: 150 },
  );
}

/**
 * Types `text` into Pi's editor and presses Enter every ~2 s until `effect` holds (it gets the
 * current screen). Returns the screen on which the effect showed.
 */
export async function submitLine(
  tmux: PrivateTmux,
  paneId: string,
  text: string,
  effect: (screen: string) => boolean | Promise<boolean>,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<string> {
  await tmux.run(["send-keys", "-t", paneId, "-l", "--", text]);
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    await sleep(300, options.signal);
    await tmux.run(["send-keys", "-t", paneId, "Enter"]);
    const until = Math.min(Date.now() + ENTER_EVERY_MS, deadline);
    while (Date.now() < until) {
      const screen = await tmux.capturePane(paneId);
      if (await effect(screen)) return screen;
      await sleep(100, options.signal);
    }
  }
  throw new DemoFailure(`Pi did not take ${JSON.stringify(text)} within ${seconds(options.timeoutMs)}.`);
}

/** Whitespace-insensitive "screen shows text" (the TUI may pad or re-wrap lines). */
export function screenShows(screen: string, text: string): boolean {
  const squash = (s: string) => s.replace(/\s+/g, " ");
  return squash(screen).includes(squash(text));
}
