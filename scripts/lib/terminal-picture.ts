/**
 * The README's picture, taken from a real terminal: an xterm on a virtual X server (Xvfb) attaches
 * read-only to the demo's tmux server, one window at a time, and ImageMagick captures its window
 * (`import`) and stacks the captures, each under its title (`convert`). What the picture shows is
 * what tmux draws in xterm, colours and all; nothing here draws text itself.
 *
 * Invariants:
 * - Installs nothing: `missingPictureTools()` says in one sentence what is missing, and the demo
 *   asks it before it starts.
 * - Pi never redraws for the picture: tmux's status line is off while an xterm of exactly the
 *   window's size is attached, so no window changes size. The status line and the window that was
 *   current are put back afterwards (for --keep-tmux).
 * - A capture is taken once the xterm shows the screen and two captures in a row are the same.
 * - Every outside call has a timeout; the X server and the xterms are ended before it returns.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa, type ResultPromise } from "execa";
import { DemoFailure, waitFor } from "./wait.ts";

const CALL_TIMEOUT_MS = 30_000;
const SHOWN_TIMEOUT_MS = 20_000;
const FONT = "DejaVu Sans Mono";
const FONT_SIZE = 11;
const BACKGROUND = "#1e1f22";
const FOREGROUND = "#d8d8d8";
const TITLE_BACKGROUND = "#2b2d31";
const FRAME = "#101113";
const XTERM_TITLE = "pi-handoff-demo-capture";

const INSTALL_HINT = "apt-get install xvfb xterm x11-utils imagemagick fonts-dejavu-core";

interface Panel {
  title: string;
  file: string;
  /** The capture's width in pixels. */
  width: number;
}

export interface PictureWindow {
  /** A tmux target for the window (`demo:0`). */
  target: string;
  title: string;
}

/** One sentence naming what --screenshot needs and this machine lacks, or undefined when nothing is missing. */
export async function missingPictureTools(): Promise<string | undefined> {
  const probes: [string, () => Promise<boolean>][] = [
    ["Xvfb", () => answers("Xvfb", ["-help"])],
    ["xterm", () => answers("xterm", ["-version"])],
    ["xwininfo", () => answers("xwininfo", ["-version"])],
    ["ImageMagick's import", () => answers("import", ["-version"], /ImageMagick/)],
    ["ImageMagick's convert", () => answers("convert", ["-version"], /ImageMagick/)],
    [`the ${FONT} font`, () => answers("fc-list", [FONT], /DejaVu Sans Mono/)],
  ];
  const missing: string[] = [];
  for (const [name, probe] of probes) if (!(await probe())) missing.push(name);
  if (missing.length === 0) return undefined;
  return `--screenshot takes the picture in a real terminal, and this machine lacks ${missing.join(", ")} (on Debian: ${INSTALL_HINT}).`;
}

async function answers(command: string, args: readonly string[], says?: RegExp): Promise<boolean> {
  const result = await execa(command, args, { reject: false, timeout: CALL_TIMEOUT_MS, stdin: "ignore", all: true });
  if (result.failed && result.exitCode === undefined) return false;
  return says === undefined || says.test(result.all ?? "");
}

/**
 * Captures each window of the tmux server on `socketPath` as xterm shows it, stacked in that order
 * under their titles, as PNG bytes written to `output`.
 */
export async function takeTerminalPicture(options: {
  socketPath: string;
  windows: readonly PictureWindow[];
  columns: number;
  rows: number;
  output: string;
  signal: AbortSignal;
}): Promise<void> {
  const tmux = (args: readonly string[]) =>
    execa("tmux", ["-S", options.socketPath, ...args], { timeout: CALL_TIMEOUT_MS, stdin: "ignore" });
  const windows = (await tmux(["list-windows", "-a", "-F", "#{window_active} #{session_name}:#{window_index}"])).stdout;
  const current = /^1 (.+)$/m.exec(windows)?.[1];
  const work = await mkdtemp(join(tmpdir(), "phw-demo-picture-"));
  const server = startXvfb(options.columns, options.rows);
  try {
    const display = await displayOf(server);
    await tmux(["set-option", "-g", "status", "off"]);
    const panels: Panel[] = [];
    for (const [index, window] of options.windows.entries()) {
      const file = join(work, `${index}.png`);
      const width = await captureWindow({ ...options, display, target: window.target, file });
      panels.push({ title: window.title, file, width });
    }
    await stack(panels, options.output);
  } finally {
    server.kill("SIGTERM");
    await server.catch(() => undefined);
    await tmux(["set-option", "-gu", "status"]).catch(() => undefined);
    if (current !== undefined) await tmux(["select-window", "-t", current]).catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}

const XVFB_OPTIONS = { stdin: "ignore", stderr: "ignore", buffer: false, reject: false } as const;
type Xvfb = ResultPromise<typeof XVFB_OPTIONS>;

function startXvfb(columns: number, rows: number): Xvfb {
  // Room for any cell size the font may have; the xterm sits at the top left. -noreset: without it
  // the server resets when the first xterm closes, and the next one can find no display.
  const screen = `${columns * 16}x${rows * 32}x24`;
  return execa("Xvfb", ["-displayfd", "1", "-screen", "0", screen, "-nolisten", "tcp", "-noreset"], XVFB_OPTIONS);
}

/** The display Xvfb chose (it writes the number on -displayfd once it accepts clients). */
function displayOf(server: Xvfb): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new DemoFailure("Xvfb did not start within 30 s.")), CALL_TIMEOUT_MS);
    let text = "";
    server.stdout.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const number = /^(\d+)\n/.exec(text)?.[1];
      if (number !== undefined) {
        clearTimeout(timer);
        resolve(`:${number}`);
      }
    });
    server.then(() => {
      clearTimeout(timer);
      reject(new DemoFailure("Xvfb exited before it opened a display."));
    }, reject);
  });
}

async function captureWindow(options: {
  socketPath: string;
  display: string;
  target: string;
  columns: number;
  rows: number;
  file: string;
  signal: AbortSignal;
}): Promise<number> {
  const env = { ...process.env, DISPLAY: options.display };
  const run = (command: string, args: readonly string[]) =>
    execa(command, args, { env, timeout: CALL_TIMEOUT_MS, stdin: "ignore", reject: false });
  const pixelsOf = async (windowId: string) =>
    Buffer.from(
      (
        await execa("import", ["-window", windowId, "-depth", "8", "rgb:-"], {
          env,
          timeout: CALL_TIMEOUT_MS,
          stdin: "ignore",
          reject: false,
          encoding: "buffer",
        })
      ).stdout,
    );
  // -T RGB: xterm shows 24-bit colour, so tmux passes Pi's colours on as they are.
  const terminal = execa(
    "xterm",
    [
      ...["-geometry", `${options.columns}x${options.rows}+0+0`, "-b", "0", "-T", XTERM_TITLE],
      ...["-fa", FONT, "-fs", String(FONT_SIZE), "-bg", BACKGROUND, "-fg", FOREGROUND],
      ...["-e", "tmux", "-T", "RGB", "-S", options.socketPath, "attach-session", "-r", "-t", options.target],
    ],
    { env, stdin: "ignore", stdout: "ignore", stderr: "ignore", reject: false },
  );
  try {
    const { windowId, width } = await waitFor(
      async () => {
        const info = (await run("xwininfo", ["-name", XTERM_TITLE])).stdout;
        const windowId = /Window id: (0x[0-9a-f]+)/.exec(info)?.[1];
        const width = Number(/Width: (\d+)/.exec(info)?.[1]);
        return windowId !== undefined && width > 0 ? { windowId, width } : undefined;
      },
      { timeoutMs: SHOWN_TIMEOUT_MS, failure: "xterm opened no window within 20 s.", signal: options.signal },
    );
    let previous: Buffer | undefined;
    await waitFor(
      async () => {
        const pixels = await pixelsOf(windowId);
        const settled = previous !== undefined && pixels.length > 0 && pixels.equals(previous) && drawn(pixels);
        previous = pixels;
        return settled ? true : undefined;
      },
      {
        timeoutMs: SHOWN_TIMEOUT_MS,
        failure: `xterm did not show tmux window ${options.target} within 20 s.`,
        signal: options.signal,
      },
    );
    const written = await run("import", ["-window", windowId, options.file]);
    if (written.exitCode !== 0) throw new DemoFailure(`ImageMagick's import failed: ${written.stderr.split("\n")[0]}`);
    return width;
  } finally {
    terminal.kill("SIGTERM");
    await terminal;
  }
}

/** More than the background: tmux has drawn the screen. */
function drawn(pixels: Buffer): boolean {
  for (let offset = 3; offset + 2 < pixels.length; offset += 3)
    if (pixels[offset] !== pixels[0] || pixels[offset + 1] !== pixels[1] || pixels[offset + 2] !== pixels[2])
      return true;
  return false;
}

/** The captures one above the other, each under its title, in a thin frame; no date in the file. */
async function stack(panels: readonly Panel[], output: string): Promise<void> {
  const args = ["-background", TITLE_BACKGROUND, "-fill", "#e8e8e8", "-font", "DejaVu-Sans-Mono-Bold"];
  args.push("-pointsize", "14", "-gravity", "west");
  for (const [index, panel] of panels.entries()) {
    if (index > 0) args.push("(", "-size", `${panel.width}x12`, `xc:${FRAME}`, ")");
    // ImageMagick reads `%` in a label as an escape and a leading `@` as a file to read.
    const label = `label: ${panel.title.replaceAll("%", "%%")}`;
    args.push(
      "(",
      "+size",
      label,
      "-bordercolor",
      TITLE_BACKGROUND,
      "-border",
      "8x0",
      "-extent",
      `${panel.width}x30`,
      ")",
    );
    args.push(panel.file);
  }
  args.push("-background", FRAME, "-gravity", "center", "-append", "-bordercolor", FRAME, "-border", "8");
  args.push("-depth", "8", "-strip", "-define", "png:exclude-chunks=date,time", output);
  const result = await execa("convert", args, { timeout: CALL_TIMEOUT_MS, stdin: "ignore", reject: false });
  if (result.exitCode !== 0) throw new DemoFailure(`ImageMagick's convert failed: ${result.stderr.split("\n")[0]}`);
}
