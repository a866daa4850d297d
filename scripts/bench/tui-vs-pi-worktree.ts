/**
 * Benchmark (j): typed into Pi's TUI as a user does, `/handoff-worktree <branch>` against
 * pi-worktree's `/worktree <branch>`, in one private tmux server, on a small conversation and on a
 * 50 MB one. Each round starts a parent Pi in a new window of its own (its shell stays, as
 * pi-worktree's relaunch types into it) and times from the Enter that submits the command:
 * - ours: until the child is confirmed (its acknowledgement in the manifest), and until the child's
 *   screen (in its own window) is drawn in the worktree;
 * - pi-worktree: until the new Pi's screen is drawn in the worktree, in the same pane.
 * The two alternate round by round, so load falls on both alike.
 *
 * pi-worktree is on no registry (its README installs it from git): the part runs where
 * `PI_HANDOFF_BENCH_PI_WORKTREE` names a checkout of github.com/threadsafe-systems/pi-worktree,
 * and is skipped, saying so, elsewhere.
 *
 * `BENCH_TRACE=1` prints each of our handoffs' recorded steps (the manifest's history).
 *
 * Invariants: everything lives in one temp dir (HOME, agent dir, the tmux socket); the tmux server
 * is always killed; every wait has a deadline.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { ManifestStore } from "../../src/manifest/store.ts";
import { defaultSessionDir } from "../../src/session/paths.ts";
import { benchEnv } from "./bench-env.ts";
import { generateSession } from "./session-generator.ts";

const PROJECT = realpathSync(join(dirname(fileURLToPath(import.meta.url)), "..", ".."));
const NODE_BIN = realpathSync(join(PROJECT, "node_modules", ".bin", "node"));
const PI_CLI = realpathSync(join(PROJECT, "node_modules", ".bin", "pi"));
const FAUX_EXTENSION = join(PROJECT, "test", "support", "fixtures", "faux-provider.ts");
const EXTENSION = join(PROJECT, "pi-extension", "index.ts");
const TIMEOUT_MS = 120_000;
/** Pi's footer names the model; a path containing it (the faux extension's) does not count. */
const PI_READY = /(?<!\/)faux-1/;

export interface TuiSideBySide {
  /** Enter to the child confirmed (ours), per round. */
  oursConfirmedMs: number[];
  /** Enter to the child's screen drawn in the worktree (ours), per round. */
  oursScreenMs: number[];
  /** Enter to the new Pi's screen drawn in the worktree (pi-worktree), per round. */
  piWorktreeScreenMs: number[];
  /** The rounds that did not finish, each as `<tool> round <n>: <what went wrong>`; their figures are left out. */
  failedRounds: string[];
}

export interface TuiVsPiWorktreeResult {
  piWorktree: string;
  small: TuiSideBySide;
  large: TuiSideBySide & { sessionBytes: number };
}

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}

export async function measureTuiVsPiWorktree(options: {
  rounds: number;
  largeRounds: number;
  largeBytes: number;
}): Promise<TuiVsPiWorktreeResult | { skipped: string }> {
  const checkout = process.env.PI_HANDOFF_BENCH_PI_WORKTREE;
  const piWorktreeEntry = checkout === undefined ? undefined : join(checkout, "extensions", "worktree.ts");
  if (piWorktreeEntry === undefined || !existsSync(piWorktreeEntry))
    return {
      skipped:
        "pi-worktree is on no registry: set PI_HANDOFF_BENCH_PI_WORKTREE to a checkout of github.com/threadsafe-systems/pi-worktree",
    };
  const root = realpathSync(mkdtempSync(join(tmpdir(), "phw-bench-tui-")));
  const home = join(root, "home");
  const agentDir = join(root, "agent");
  const repo = join(root, "repo");
  for (const dir of [home, join(agentDir, "extensions"), repo]) mkdirSync(dir, { recursive: true });
  copyFileSync(FAUX_EXTENSION, join(agentDir, "extensions", "faux-provider.ts"));
  const env = benchEnv(PROJECT, { root, home, agentDir }, { SHELL: "/bin/bash" });
  const run = (file: string, args: string[], cwd = repo) =>
    execa(file, args, { cwd, env, extendEnv: false, stdin: "ignore", timeout: TIMEOUT_MS });
  const socket = join(root, "tmux.sock");
  const tmux = async (args: string[]): Promise<string> => (await run("tmux", ["-S", socket, ...args])).stdout;
  try {
    await run("git", ["init", "-q", "-b", "main"]);
    writeFileSync(join(repo, "README.md"), "bench\n");
    await run("git", ["add", "-A"]);
    await run("git", ["commit", "-q", "-m", "bench repository"]);
    await run(NODE_BIN, [PI_CLI, "-p", "--model", "faux/faux-1", "describe this repository"]);
    const sessionDir = defaultSessionDir(repo, agentDir);
    const smallFile = join(sessionDir, readdirSync(sessionDir)[0] ?? "");
    const largeFile = join(root, "large.jsonl");
    const large = await generateSession({
      file: largeFile,
      cwd: repo,
      entries: 20_000,
      targetBytes: options.largeBytes,
    });

    await tmux(["-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "200", "-y", "50"]);
    await tmux(["set", "-g", "default-command", "exec /bin/bash --norc --noprofile"]);
    const store = ManifestStore.forAgentDir(agentDir);

    /** A parent Pi on `sessionFile` in a new window; resolves with its pane once its screen is drawn. */
    const startParent = async (sessionFile: string, extension: string): Promise<string> => {
      const pane = (await tmux(["new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "bench:", "-c", repo])).trim();
      const line = [NODE_BIN, PI_CLI, "--session", sessionFile, "--model", "faux/faux-1", "--extension", extension]
        .map(shellQuote)
        .join(" ");
      await tmux(["send-keys", "-t", pane, "-l", "--", line]);
      await tmux(["send-keys", "-t", pane, "Enter"]);
      await until(
        async () => (PI_READY.test(await tmux(["capture-pane", "-p", "-t", pane])) ? true : undefined),
        "the parent's screen",
      );
      // Pi draws its footer first and a long conversation seconds later (10 s for the 52 MB one
      // here), taking no keys meanwhile; a user types once it is there. Typed earlier, the command
      // waited behind that drawing, for both tools alike, and hid what each does.
      // Nothing else on the screen has it: not the conversation's words, not a temp dir's name.
      const probe = "zq-qz";
      await tmux(["send-keys", "-t", pane, "-l", "--", probe]);
      await until(
        async () => ((await tmux(["capture-pane", "-p", "-t", pane])).includes(probe) ? true : undefined),
        "the parent to take keys",
      );
      await tmux(["send-keys", "-t", pane, ...Array.from(probe, () => "BSpace")]);
      await until(
        async () => ((await tmux(["capture-pane", "-p", "-t", pane])).includes(probe) ? undefined : true),
        "the parent's editor to empty",
      );
      return pane;
    };
    const submit = async (pane: string, line: string): Promise<number> => {
      await tmux(["send-keys", "-t", pane, "-l", "--", line]);
      // The editor shows the whole line, then any completion menu settles, before the one timed Enter.
      await until(
        async () => ((await tmux(["capture-pane", "-p", "-t", pane])).includes(line) ? true : undefined),
        "the typed command",
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      await tmux(["send-keys", "-t", pane, "Enter"]);
      return performance.now();
    };
    /**
     * A pane's screen is Pi's, drawn in the worktree of `branch`: its footer's path line ends with
     * `(<branch>)`. A status line naming the branch (pi-worktree's "Creating git worktree
     * (<branch>)...", shown by the parent) is not a footer.
     */
    const drawnIn = async (pane: string, branch: string): Promise<true | undefined> => {
      const screen = await tmux(["capture-pane", "-p", "-t", pane]).catch(() => "");
      // Pi's footer: `<path> (<branch>)`, then ` • <session name>` when the session has one.
      const footer = screen.split("\n").some((line) => {
        const text = line.trim();
        const at = text.lastIndexOf(`(${branch})`);
        if (at < 0 || !/^[~/…]/.test(text)) return false;
        const after = text.slice(at + branch.length + 2);
        return after === "" || after.startsWith(" • ");
      });
      return PI_READY.test(screen) && footer ? true : undefined;
    };

    const ours = async (sessionFile: string, branch: string, into: TuiSideBySide): Promise<void> => {
      const pane = await startParent(sessionFile, EXTENSION);
      const enter = await submit(pane, `/handoff-worktree ${branch}`);
      let childPane: string | undefined;
      let confirmedAt: number | undefined;
      await until(async () => {
        const entries = await store.list();
        for (const entry of entries) {
          if (!entry.ok || entry.manifest.branch !== branch) continue;
          if (entry.manifest.mux.kind === "tmux") childPane = entry.manifest.mux.paneId;
          if (entry.manifest.state === "running") confirmedAt ??= performance.now();
          if (entry.manifest.state === "failed")
            throw new Error(`The benchmark handoff failed: ${entry.manifest.error?.message}`);
        }
        return confirmedAt;
      }, "the child confirmed");
      if (childPane === undefined) throw new Error("The benchmark handoff recorded no pane.");
      const child = childPane;
      const drawnAt = await until(
        async () => ((await drawnIn(child, branch)) ? performance.now() : undefined),
        "the child's screen",
      );
      if (process.env.BENCH_TRACE === "1") {
        const m = (await store.list()).find((e) => e.ok && e.manifest.branch === branch);
        if (m?.ok) {
          const first = m.manifest.history[0];
          const checks = first?.steps?.reduce((sum, step) => sum + step.ms, 0) ?? 0;
          const enterAt = Date.now() - (performance.now() - enter);
          console.error(
            branch,
            `Enter to the command's start ${Math.round(Date.parse(first?.at ?? "") - checks - enterAt)} ms;`,
            JSON.stringify(m.manifest.history),
          );
        }
      }
      into.oursConfirmedMs.push((confirmedAt ?? drawnAt) - enter);
      into.oursScreenMs.push(drawnAt - enter);
    };
    const piWorktree = async (sessionFile: string, branch: string, into: TuiSideBySide): Promise<void> => {
      const pane = await startParent(sessionFile, piWorktreeEntry);
      const enter = await submit(pane, `/worktree ${branch}`);
      const drawnAt = await until(
        async () => ((await drawnIn(pane, branch)) ? performance.now() : undefined),
        "pi-worktree's new screen",
      ).catch(async (error: unknown) => {
        const screen = await tmux(["capture-pane", "-p", "-t", pane]).catch(() => "");
        throw new Error(`${error instanceof Error ? error.message : String(error)} Its pane shows:\n${screen}`);
      });
      into.piWorktreeScreenMs.push(drawnAt - enter);
    };

    const sides = (): TuiSideBySide => ({
      oursConfirmedMs: [],
      oursScreenMs: [],
      piWorktreeScreenMs: [],
      failedRounds: [],
    });
    /** One tool's round; a round that fails is recorded as failed, and the next one runs. */
    const round = async (tool: string, index: number, into: TuiSideBySide, measure: () => Promise<void>) => {
      try {
        await measure();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        console.error(`tuiVsPiWorktree: ${tool} round ${index + 1} failed: ${message}`);
        into.failedRounds.push(`${tool} round ${index + 1}: ${message.split("\n")[0]}`);
      }
    };
    const small = sides();
    const largeSides = sides();
    for (let i = 0; i < options.rounds; i++) {
      await round("ours", i, small, () => ours(smallFile, `bench/small-${i}`, small));
      await round("pi-worktree", i, small, () => piWorktree(smallFile, `feat/small-${i}`, small));
    }
    for (let i = 0; i < options.largeRounds; i++) {
      await round("ours", i, largeSides, () => ours(largeFile, `bench/large-${i}`, largeSides));
      await round("pi-worktree", i, largeSides, () => piWorktree(largeFile, `feat/large-${i}`, largeSides));
    }
    const version = (await run("git", ["-C", checkout ?? "", "describe", "--tags", "--always"]).catch(() => undefined))
      ?.stdout;
    return {
      piWorktree: `pi-worktree ${version?.trim() || "(checkout)"}`,
      small,
      large: { ...largeSides, sessionBytes: large.bytes },
    };
  } finally {
    await execa("tmux", ["-S", socket, "kill-server"], { reject: false, timeout: 10_000 });
    // The Pis the server ran write their last state as they exit (a 52 MB one slowly): retried
    // until they are done, and a directory still busy after a minute is left, said, not thrown,
    // so the figures measured are kept.
    const givingUp = Date.now() + 60_000;
    for (;;) {
      try {
        rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
        break;
      } catch (error) {
        if (Date.now() > givingUp) {
          console.error(
            `tuiVsPiWorktree: left ${root} behind: ${error instanceof Error ? error.message : String(error)}`,
          );
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }
}
