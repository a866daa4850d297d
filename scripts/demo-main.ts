/**
 * The demo: the whole handoff with the real Pi, on a fresh machine, fully offline.
 *
 *   npm run demo [-- --keep-tmux] [--screenshot] [--dir <path>]   (or node scripts/demo.ts on Node 22.19+; on an older
 *   Node its launcher, scripts/demo.mjs, says in one line to use npm run demo)
 *
 * 1. Makes `.scratch/demo-<yyyymmdd-hhmmss>/` (or `--dir`, new or empty) with an isolated HOME, a Pi agent dir holding the
 *    faux (offline) model, and a small git repository with three commits.
 * 2. Starts a private tmux server (own socket, no config, no rc files, only the scratch environment).
 * 3. Starts Pi with this package in the first pane and has a short conversation with it.
 * 4. Types `/handoff-worktree demo/greeting -- add a greeting to src/app.js`, waits for the
 *    manifest to reach `running` and for the child Pi (in a new window) to answer the task.
 * 5. Prints the manifest, the child session's header, both screens and `git worktree list`;
 *    with --screenshot, also takes both screens as xterm shows them to docs/demo.png
 *    (scripts/lib/terminal-picture.ts: Xvfb, xterm and ImageMagick, which it never installs).
 * 6. Kills the tmux server and any demo process left (unless --keep-tmux), keeping the scratch dir.
 *
 * Exit status: 0 on success, 1 with a one-sentence reason otherwise (130 when interrupted).
 */
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { Manifest } from "../src/manifest/schema.ts";
import { manifestsDir, readOnlyManifest } from "./lib/manifests.ts";
import { piTuiCommandLine, screenShows, submitLine, typeCommandLine, waitForScreen } from "./lib/pi-tui.ts";
import { SESSION_NAME, startPrivateTmux, type PrivateTmux } from "./lib/private-tmux.ts";
import { findDemoProcesses, stopDemoProcesses, waitForReaping } from "./lib/processes.ts";
import { createScratch, type Scratch } from "./lib/scratch.ts";
import { createScratchRepo, git } from "./lib/scratch-repo.ts";
import { assistantAnswersSince, readSessionFile } from "./lib/session-file.ts";
import { missingPictureTools, takeTerminalPicture } from "./lib/terminal-picture.ts";
import { DemoFailure, seconds, waitFor } from "./lib/wait.ts";

const PROJECT_ROOT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), ".."));
const PI_CLI = realpathSync(join(PROJECT_ROOT, "node_modules", ".bin", "pi"));
const FAUX_PROVIDER_FILE = join(PROJECT_ROOT, "test", "support", "fixtures", "faux-provider.ts");
const SCREENSHOT_FILE = join(PROJECT_ROOT, "docs", "demo.png");

/** The demo's terminal, in cells (the picture's xterm has the same size). */
const TMUX_COLUMNS = 160;
const TMUX_ROWS = 45;

const QUESTIONS = ["what does this repo do?", "where is the entry point?"];
const BRANCH = "demo/greeting";
const TASK = "add a greeting to src/app.js";
const HANDOFF_LINE = `/handoff-worktree ${BRANCH} -- ${TASK}`;

/** How Pi reports an exception thrown by the command's handler. */
const HANDOFF_CRASH = /Extension "command:handoff-worktree" error: (.*)/;

const PI_START_TIMEOUT_MS = 60_000;
const TURN_TIMEOUT_MS = 30_000;
const HANDOFF_TIMEOUT_MS = 90_000;
const CHILD_ANSWER_TIMEOUT_MS = 30_000;

const HELP = `Usage: npm run demo -- [--keep-tmux] [--screenshot] [--dir <path>] [--help]   (or node scripts/demo.ts ...)

Runs /handoff-worktree end to end with the real Pi, offline (a faux model answers
"faux reply to: <your text>"), in a private tmux server:

  1. creates .scratch/demo-<yyyymmdd-hhmmss>/ with an isolated HOME, a Pi agent dir
     and a small git repository (3 commits); nothing outside it is touched
  2. starts Pi in tmux in that repository and asks it ${QUESTIONS.length} questions
  3. types: ${HANDOFF_LINE}
  4. waits for the handoff manifest to reach "running" and for the child Pi, in a
     new tmux window on a new worktree, to answer the task
  5. prints the manifest, the child session's header, both screens and
     git worktree list
  6. kills the tmux server and any Pi it left, and keeps the scratch dir

Options:
  --keep-tmux   leave the tmux server (and both Pis) running and print the
                command to attach to it
  --screenshot  also take both screens, as a real terminal (xterm, under Xvfb)
                shows them, to docs/demo.png; needs Xvfb, xterm, x11-utils,
                ImageMagick and the DejaVu fonts (it installs nothing)
  --dir <path>  make the scratch dir there (new or empty) instead of
                .scratch/demo-<stamp>/: the screenshot shows its paths, so the
                README's picture is made with --dir /tmp/handoff-demo
  -h, --help    show this text

Exit status: 0 on success, 1 on failure (with the reason and the screens).`;

interface DemoOptions {
  help: boolean;
  keepTmux: boolean;
  screenshot: boolean;
  dir?: string;
}

interface Demo {
  scratch: Scratch;
  tmux: PrivateTmux;
  /** Where the handoff's manifest appears: `<agent>/handoff-worktree/manifests/`. */
  manifests: string;
  signal: AbortSignal;
  /** Pids seen in the demo's panes or manifest, checked again at shutdown. */
  pids: Set<number>;
}

interface HandoffResult {
  manifest: Manifest;
  manifestPath: string;
  childPaneId: string;
}

function parseOptions(argv: string[]): DemoOptions {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        help: { type: "boolean", short: "h" },
        "keep-tmux": { type: "boolean" },
        screenshot: { type: "boolean" },
        dir: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    });
    return {
      help: values.help === true,
      keepTmux: values["keep-tmux"] === true,
      screenshot: values.screenshot === true,
      ...(values.dir === undefined ? {} : { dir: values.dir }),
    };
  } catch (error) {
    throw new DemoFailure(`${error instanceof Error ? error.message : String(error)} (see --help).`);
  }
}

function step(text: string): void {
  console.log(`→ ${text}`);
}

function heading(title: string): void {
  console.log(`\n==== ${title} ====`);
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

async function startParentPi(demo: Demo): Promise<void> {
  const pane = demo.tmux.firstPaneId;
  await typeCommandLine(
    demo.tmux,
    pane,
    piTuiCommandLine({ cwd: demo.scratch.repo, projectRoot: PROJECT_ROOT, piCli: PI_CLI }),
  );
  // The footer names the model as `faux-1`; the echoed command line has it as `faux/faux-1`.
  await waitForScreen(demo.tmux, pane, (screen) => /(?<![\w/-])faux-1\b/.test(screen), {
    timeoutMs: PI_START_TIMEOUT_MS,
    failure: `The parent Pi did not show its TUI (footer with faux-1) within ${seconds(PI_START_TIMEOUT_MS)}.`,
    signal: demo.signal,
  });
}

async function askQuestions(demo: Demo): Promise<void> {
  for (const question of QUESTIONS) {
    const started = Date.now();
    await submitLine(
      demo.tmux,
      demo.tmux.firstPaneId,
      question,
      (screen) => screenShows(screen, `faux reply to: ${question}`),
      {
        timeoutMs: TURN_TIMEOUT_MS,
        signal: demo.signal,
      },
    );
    step(`Asked ${JSON.stringify(question)}; Pi answered in ${seconds(Date.now() - started)}.`);
  }
}

/** Types the handoff and waits until Pi has visibly taken it (status line, notice, crash report or manifest). */
async function requestHandoff(demo: Demo): Promise<void> {
  try {
    await submitLine(
      demo.tmux,
      demo.tmux.firstPaneId,
      HANDOFF_LINE,
      async (screen) =>
        /handoff |Handed off/.test(screen) ||
        HANDOFF_CRASH.test(screen) ||
        (await readOnlyManifest(demo.manifests)) !== undefined,
      { timeoutMs: TURN_TIMEOUT_MS, signal: demo.signal },
    );
  } catch (error) {
    if (!(error instanceof DemoFailure)) throw error;
    throw new DemoFailure(
      `Pi did not start the handoff within ${seconds(TURN_TIMEOUT_MS)} (it may have refused it; see the parent's screen).`,
    );
  }
}

/** Before there is a manifest: if Pi reported the command itself as crashed, there never will be one. */
async function failIfTheCommandCrashed(demo: Demo): Promise<undefined> {
  const screen = await demo.tmux.capturePane(demo.tmux.firstPaneId);
  const crash = HANDOFF_CRASH.exec(screen);
  if (crash !== null) throw new DemoFailure(`The /handoff-worktree command crashed: ${(crash[1] ?? "").trim()}`);
  return undefined;
}

/** Waits for `running`; `failed` or `launch_unconfirmed` end the demo with the manifest printed. */
async function waitForHandoffOutcome(demo: Demo): Promise<HandoffResult> {
  let lastState = "no manifest";
  const found = await waitFor(
    async () => {
      const current = await readOnlyManifest(demo.manifests);
      if (current === undefined) return failIfTheCommandCrashed(demo);
      lastState = current.manifest.state;
      if (current.manifest.child.pid !== undefined) demo.pids.add(current.manifest.child.pid);
      return ["running", "failed", "launch_unconfirmed"].includes(current.manifest.state) ? current : undefined;
    },
    {
      timeoutMs: HANDOFF_TIMEOUT_MS,
      intervalMs: 250,
      failure: () =>
        `The handoff did not reach state running within ${seconds(HANDOFF_TIMEOUT_MS)} (last state: ${lastState}).`,
      signal: demo.signal,
    },
  );
  const { manifest, path } = found;
  if (manifest.state !== "running") {
    heading(`Manifest: ${path}`);
    console.log(pretty(manifest));
    const why = manifest.error !== undefined ? ` at the ${manifest.error.step} step: ${manifest.error.message}` : ".";
    throw new DemoFailure(`The handoff ended in state ${manifest.state}${why}`);
  }
  if (manifest.mux.kind !== "tmux" || manifest.mux.paneId === undefined) {
    throw new DemoFailure("The manifest does not name the child's tmux pane.");
  }
  return { manifest, manifestPath: path, childPaneId: manifest.mux.paneId };
}

/** Waits until the child has answered the task in its session file and that answer is on its screen. */
async function waitForChildAnswer(demo: Demo, handoff: HandoffResult): Promise<string> {
  const deadline = Date.now() + CHILD_ANSWER_TIMEOUT_MS;
  const childFile = handoff.manifest.child.sessionFile;
  if (childFile === undefined) throw new DemoFailure("The manifest does not name the child's session file.");
  const since = Date.parse(handoff.manifest.createdAt);
  const failure = `The child Pi did not answer the task on its screen within ${seconds(CHILD_ANSWER_TIMEOUT_MS)}.`;
  const answer = await waitFor(
    () => {
      try {
        return assistantAnswersSince(readSessionFile(childFile), since)[0];
      } catch {
        return undefined; // not written yet, or caught mid-line
      }
    },
    { timeoutMs: CHILD_ANSWER_TIMEOUT_MS, intervalMs: 250, failure, signal: demo.signal },
  );
  await waitForScreen(demo.tmux, handoff.childPaneId, (screen) => screenShows(screen, answer), {
    timeoutMs: Math.max(deadline - Date.now(), 1_000),
    failure,
    signal: demo.signal,
  });
  return answer;
}

/**
 * The parent's widget line for the child refreshes every few seconds, and right after a launch may
 * still show the child's state from before its Pi announced itself; the picture shows it settled.
 */
async function waitForParentWidget(demo: Demo): Promise<boolean> {
  try {
    await waitForScreen(
      demo.tmux,
      demo.tmux.firstPaneId,
      (screen) => new RegExp(`handoff ${BRANCH.replace("/", "\\/")} +(working|idle|waiting)`).test(screen),
      { timeoutMs: 15_000, failure: "no live child in the widget", signal: demo.signal },
    );
    return true;
  } catch {
    return false;
  }
}

/** The parent's own notice comes after the child's acknowledgement and focus; give it a moment. */
async function waitForParentNotice(demo: Demo): Promise<boolean> {
  try {
    await waitForScreen(
      demo.tmux,
      demo.tmux.firstPaneId,
      (screen) => screen.includes(`Handed off to branch ${BRANCH}`),
      {
        timeoutMs: 10_000,
        failure: "no notice",
        signal: demo.signal,
      },
    );
    return true;
  } catch (error) {
    if (error instanceof DemoFailure) return false;
    throw error;
  }
}

async function printReport(demo: Demo, handoff: HandoffResult): Promise<void> {
  const final = (await readOnlyManifest(demo.manifests)) ?? { manifest: handoff.manifest, path: handoff.manifestPath };
  heading(`Manifest: ${final.path}`);
  console.log(pretty(final.manifest));

  const childFile = final.manifest.child.sessionFile ?? "";
  const session = readSessionFile(childFile);
  heading(`Child session: ${childFile}`);
  console.log(pretty(session.header));
  console.log(`Entries after the header: ${session.entries.length}`);

  heading(`Parent pane ${demo.tmux.firstPaneId} (window 0, pi in ${demo.scratch.repo})`);
  console.log(await demo.tmux.capturePane(demo.tmux.firstPaneId));
  heading(`Child pane ${handoff.childPaneId} (new window, pi in ${final.manifest.worktree.path})`);
  console.log(await demo.tmux.capturePane(handoff.childPaneId));

  heading(`git worktree list (${demo.scratch.repo})`);
  console.log(await git(demo.scratch.repo, demo.scratch.env, ["worktree", "list"]));
}

/** Both screens as they are now, as a real terminal shows them, in one PNG (stacked: legible at a README's width). */
async function writeScreenshot(demo: Demo, handoff: HandoffResult): Promise<void> {
  const parent = await demo.tmux.capturePane(demo.tmux.firstPaneId);
  const child = await demo.tmux.capturePane(handoff.childPaneId);
  // The README's picture shows no path of the machine it was made on (a checkout, a home).
  const own = [PROJECT_ROOT, homedir()].find((path) => path.length > 1 && `${parent}${child}`.includes(path));
  if (own !== undefined)
    throw new DemoFailure(
      `The screens show ${own}, a path of this machine, so no picture was written; run with --dir /tmp/handoff-demo.`,
    );
  const worktree = handoff.manifest.worktree.path.slice(dirname(demo.scratch.repo).length + 1);
  const childWindow = (
    await demo.tmux.run(["display-message", "-p", "-t", handoff.childPaneId, "#{session_name}:#{window_index}"])
  ).trim();
  await takeTerminalPicture({
    socketPath: demo.scratch.socketPath,
    windows: [
      { target: `${SESSION_NAME}:0`, title: `Parent Pi in repo/ (tmux window 0): typed ${HANDOFF_LINE}` },
      { target: childWindow, title: `Child Pi in ${worktree}/ (new tmux window, branch ${BRANCH})` },
    ],
    columns: TMUX_COLUMNS,
    rows: TMUX_ROWS,
    output: SCREENSHOT_FILE,
    signal: demo.signal,
  });
  const size = (await stat(SCREENSHOT_FILE)).size;
  step(`Screenshot of both screens, taken in xterm, written to ${SCREENSHOT_FILE} (${Math.round(size / 1024)} KiB).`);
}

/** Every pane's screen, for a failure report; never throws. */
async function printScreensForDebugging(tmux: PrivateTmux): Promise<void> {
  try {
    for (const pane of await tmux.listPanes()) {
      heading(`Screen of pane ${pane.paneId} (window ${pane.title})`);
      console.log(await tmux.capturePane(pane.paneId));
    }
  } catch (error) {
    console.log(
      `(Could not capture the screens: ${error instanceof Error ? error.message.split("\n")[0] : String(error)})`,
    );
  }
}

async function recordPanePids(demo: Demo): Promise<void> {
  try {
    for (const pane of await demo.tmux.listPanes()) demo.pids.add(pane.pid);
  } catch {
    // the server is already gone; /proc still finds what is left
  }
}

/** Kills the server and anything of the demo still running; returns a failure sentence if something survived. */
async function shutDown(demo: Demo): Promise<string | undefined> {
  await recordPanePids(demo);
  await demo.tmux.kill();
  const { signalled, survivors } = await stopDemoProcesses(demo.scratch.agentDir, [...demo.pids]);
  if (signalled.length > 0)
    step(`Had to signal demo processes that outlived the tmux server: ${signalled.join(", ")}.`);
  if (survivors.length > 0) return `Demo processes ${survivors.join(", ")} are still running after SIGKILL.`;
  const zombies = await waitForReaping([...demo.pids, ...signalled]);
  step("Tmux server killed; no demo process is left running.");
  if (zombies.length > 0) step(`(Exited, not yet reaped by init: ${zombies.join(", ")}.)`);
  return undefined;
}

async function removeSocketDirOutsideScratch(scratch: Scratch): Promise<void> {
  if (scratch.socketDirOutsideScratch !== undefined) {
    await rm(scratch.socketDirOutsideScratch, { recursive: true, force: true });
  }
}

function describeKeptTmux(demo: Demo): void {
  heading("Tmux server kept running (--keep-tmux)");
  console.log(`Attach:  tmux -S ${demo.scratch.socketPath} attach`);
  console.log(`Stop:    tmux -S ${demo.scratch.socketPath} kill-server`);
  const pids = findDemoProcesses(demo.scratch.agentDir, [...demo.pids]);
  console.log(`Demo processes running: ${pids.length > 0 ? pids.join(", ") : "none"}`);
}

/** First Ctrl-C (or SIGTERM) aborts the waits so the normal clean-up runs; later ones are told to wait. */
function abortOnInterrupt(): AbortController {
  const interruption = new AbortController();
  const onSignal = () => {
    if (interruption.signal.aborted) {
      console.error("Cleaning up, please wait…");
      return;
    }
    console.error("\nInterrupted; cleaning up…");
    interruption.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return interruption;
}

function reasonOf(error: unknown, interrupted: boolean): string {
  if (interrupted) return "Interrupted.";
  if (error instanceof DemoFailure) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `Unexpected error: ${message.split("\n")[0]}`;
}

async function runDemo(demo: Demo, options: DemoOptions): Promise<void> {
  await startParentPi(demo);
  step("Parent Pi is up.");
  await askQuestions(demo);
  step(`Typing ${JSON.stringify(HANDOFF_LINE)}`);
  await requestHandoff(demo);
  const handoff = await waitForHandoffOutcome(demo);
  step(
    `Manifest ${handoff.manifest.id} is running; child Pi pid ${handoff.manifest.child.pid ?? "?"} in ${handoff.manifest.worktree.path}.`,
  );
  const answer = await waitForChildAnswer(demo, handoff);
  step(`Child Pi answered the task: ${JSON.stringify(answer)}`);
  if (!(await waitForParentNotice(demo))) step('(The parent has not shown its "Handed off" notice yet.)');
  if (!(await waitForParentWidget(demo))) step("(The parent's widget does not show the child live yet.)");
  await printReport(demo, handoff);
  if (options.screenshot) await writeScreenshot(demo, handoff);
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  if (options.help) {
    console.log(HELP);
    return 0;
  }
  if (!existsSync(FAUX_PROVIDER_FILE)) throw new DemoFailure(`The faux provider ${FAUX_PROVIDER_FILE} is missing.`);
  if (options.screenshot) {
    const missing = await missingPictureTools();
    if (missing !== undefined) throw new DemoFailure(missing);
  }
  const started = Date.now();
  const interruption = abortOnInterrupt();

  let scratch: Scratch;
  try {
    scratch = createScratch(PROJECT_ROOT, FAUX_PROVIDER_FILE, options.dir === undefined ? {} : { dir: options.dir });
  } catch (error) {
    throw new DemoFailure(error instanceof Error ? error.message : String(error));
  }
  step(`Scratch dir: ${scratch.root}`);
  let demo: Demo | undefined;
  let failure: string | undefined;
  try {
    await createScratchRepo(scratch.repo, scratch.env);
    step("Scratch repository made (3 commits on main).");
    const tmux = await startPrivateTmux({
      socketPath: scratch.socketPath,
      env: scratch.env,
      width: TMUX_COLUMNS,
      height: TMUX_ROWS,
    });
    demo = { scratch, tmux, manifests: manifestsDir(scratch.agentDir), signal: interruption.signal, pids: new Set() };
    step(`Private tmux server on ${scratch.socketPath}.`);
    await runDemo(demo, options);
  } catch (error) {
    failure = reasonOf(error, interruption.signal.aborted);
    if (demo !== undefined) await printScreensForDebugging(demo.tmux);
  } finally {
    if (options.keepTmux && demo !== undefined) {
      describeKeptTmux(demo);
    } else {
      console.log("");
      const leftovers = demo !== undefined ? await shutDown(demo) : undefined;
      failure ??= leftovers;
      await removeSocketDirOutsideScratch(scratch);
    }
    console.log(`Scratch dir kept for inspection: ${scratch.root}`);
  }
  if (failure !== undefined) {
    console.error(`Demo failed: ${failure}`);
    return interruption.signal.aborted ? 130 : 1;
  }
  console.log(`Demo succeeded in ${seconds(Date.now() - started)}.`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`Demo failed: ${reasonOf(error, false)}`);
    process.exitCode = 1;
  },
);
