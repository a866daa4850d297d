/**
 * The launcher file with a real /bin/sh (and bash as the typing shell): it starts "Pi" (a recorder
 * standing in for it) with exact words whatever the paths hold, in the worktree, with only Pi's
 * own variables; a second run while the first one's Pi lives exits at once; a stale lock is taken
 * over; as a window's command it waits for its params, gives up when the handoff's process is gone
 * or cancelled, and always ends in the shell it was given; postCreate commands gate Pi; and the
 * typed line stays short however deep the agent dir is.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  exportLines,
  launchCommandFor,
  shellQuote,
  type LaunchCommand,
  type LaunchEnvironment,
} from "../../src/child/launch-command.ts";
import { warmStartFor } from "../../src/child/warm-start.ts";
import {
  cancelLauncher,
  launcherFiles,
  MAX_DIRECT_LINE,
  readLauncherNote,
  releaseWindowLauncher,
  typedLauncherLine,
  writeLauncher,
  writeLauncherParams,
  type LauncherFiles,
} from "../../src/child/launcher-file.ts";
import { postCreateFiles, postCreatePrelude, readPostCreateStatus, writeRunner } from "../../src/child/post-create.ts";
import { deleteLaunchFiles } from "../../src/child/retire.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { hostileWords } from "../support/hostile-words.ts";
import { waitFor } from "../support/tmux.ts";

const ID = "20261201-070000-feat-x-abcd";
/** How a notice names this copy's `pi-handoff` where none is on PATH: its launcher, quoted (recoveryCommand). */
const RECOVERY_BY_PATH = "'/opt/a $HOME b/pi-handoff.mjs'";
// Names a directory can have: every hostile word but the empty ones and those with a slash.
/** Writes this process's environment, NUL-separated, to stdout. */
const DUMP_ENV = "process.stdout.write(Object.entries(process.env).map(([k, v]) => k + '=' + v).join('\\0'))";
const hostile = hostileWords("CANARY").filter((word) => word !== "" && word !== "''" && !word.includes("/"));

describe("the launcher", () => {
  let dir: string;
  let store: string;
  let files: LauncherFiles;
  let recorder: string;

  beforeEach(() => {
    dir = makeTempDir("phw-launcher-");
    store = join(dir, "store 'q' $(x)");
    mkdirSync(store, { recursive: true });
    files = launcherFiles(join(store, `${ID}.json`));
    // Stands in for Pi: records argv, cwd and the environment it got; stays alive while HOLD exists.
    recorder = join(dir, "record.cjs");
    writeFileSync(
      recorder,
      `const fs = require("fs");
fs.writeFileSync(process.env.RECORD_TO, JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(), pid: process.pid,
  agentDir: process.env.PI_CODING_AGENT_DIR, handoffId: process.env.PI_HANDOFF_ID, offline: process.env.PI_OFFLINE,
  herdrAgent: process.env.HERDR_AGENT, secret: process.env.SECRET_TOKEN,
  handoffEnv: Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(PI_HANDOFF_PORTS?|HOSTILE_\\d+)$/.test(k))) }));
const hold = process.env.HOLD; if (hold) { const t = setInterval(() => { if (!fs.existsSync(hold)) clearInterval(t); }, 20); }`,
    );
  });
  afterEach(() => removeTempDir(dir));

  function manifest(
    worktree: string,
    overrides: Partial<Manifest["child"]> = {},
    kind: "tmux" | "herdr" = "tmux",
  ): Manifest {
    return {
      version: 1,
      id: ID,
      createdAt: "2026-12-01T07:00:00.000Z",
      updatedAt: "2026-12-01T07:00:00.000Z",
      state: "forked",
      history: [{ state: "forked", at: "2026-12-01T07:00:00.000Z" }],
      branch: "feat/x",
      base: { ref: "HEAD", sha: "a".repeat(40) },
      repo: { root: dir, commonDir: join(dir, ".git") },
      parent: { sessionFile: join(dir, "parent.jsonl"), sessionId: "p", leafId: "l", cwd: dir },
      worktree: { path: worktree },
      mux: { kind },
      child: {
        sessionFile: join(dir, "session it's.jsonl"),
        model: { provider: "faux", id: "model $(x)" },
        thinkingLevel: "high",
        approve: true,
        extraArgs: ["--extension", join(dir, "ext 'e'.ts")],
        sessionDir: { dir: join(dir, "sessions $(y)"), custom: true },
        ...overrides,
      },
    };
  }

  function derive(m: Manifest): LaunchCommand {
    const derived = launchCommandFor(m, {
      piCommand: [process.execPath, recorder],
      agentDir: join(dir, "agent 'a'"),
      env: { PI_OFFLINE: "1", SECRET_TOKEN: "do-not-forward" },
    });
    if (!derived.ok) throw new Error(derived.message);
    return derived.command;
  }

  async function prepare(
    command: LaunchCommand,
    token = "tok1",
    extra: { prelude?: readonly string[] } = {},
  ): Promise<void> {
    await writeLauncher({
      handoffId: ID,
      files,
      ownerPid: process.pid,
      paramsWaitMs: 5_000,
      recoveryCommand: "pi-handoff",
    });
    await writeLauncherParams(files, { token, command, ...extra });
  }

  /** `sh <launcher>` typed into bash, as a pane's shell would run it. */
  function typed(env: Record<string, string>): ReturnType<typeof spawnSync> {
    return spawnSync("/bin/bash", ["--norc", "--noprofile", "-c", `sh '${files.script.replace(/'/g, `'\\''`)}'`], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
      encoding: "utf8",
      timeout: 15_000,
    });
  }

  it.each(hostile)("starts Pi with exact words in a worktree named %j", async (name) => {
    const worktree = join(dir, `wt ${name}`);
    mkdirSync(worktree, { recursive: true });
    await prepare(derive(manifest(worktree)));
    const recordTo = join(dir, "record.json");
    const run = typed({ RECORD_TO: recordTo, SECRET_TOKEN: "in-the-shell" });
    expect(run.status, String(run.stderr)).toBe(0);
    const recorded = JSON.parse(readFileSync(recordTo, "utf8"));
    expect(recorded).toMatchObject({
      argv: [
        "--session",
        join(dir, "session it's.jsonl"),
        "--session-dir",
        join(dir, "sessions $(y)"),
        "--model",
        "faux/model $(x)",
        "--thinking",
        "high",
        "--approve",
        "--extension",
        join(dir, "ext 'e'.ts"),
      ],
      cwd: worktree,
      agentDir: join(dir, "agent 'a'"),
      handoffId: ID,
      offline: "1",
    });
    // Typed: the launcher became Pi, so the start it announced names Pi's own pid.
    expect(await readLauncherNote(files.started, "tok1")).toEqual({ pid: recorded.pid });
    expect(readFileSync(files.params, "utf8")).not.toContain("do-not-forward");
    expect(existsSync(join(dir, "CANARY"))).toBe(false);
    expect(existsSync(join(worktree, "CANARY"))).toBe(false);
  });

  it("sets HERDR_AGENT=pi on Herdr only, and passes --session-dir only for a custom dir", async () => {
    const worktree = join(dir, "wt");
    mkdirSync(worktree);
    const herdr = derive(manifest(worktree, { sessionDir: { dir: join(dir, "s"), custom: false } }, "herdr"));
    expect(herdr.env).toContainEqual(["HERDR_AGENT", "pi"]);
    expect(herdr.argv).not.toContain("--session-dir");
    expect(derive(manifest(worktree)).env.map(([name]) => name)).not.toContain("HERDR_AGENT");
  });

  it("derives the session dir of a manifest from before it was recorded from the session's place", () => {
    const worktree = join(dir, "wt");
    const agentDir = join(dir, "agent 'a'");
    const legacy = manifest(worktree, { sessionDir: undefined, sessionFile: join(dir, "custom", "s.jsonl") });
    delete legacy.child.sessionDir;
    const derived = launchCommandFor(legacy, { piCommand: ["pi"], agentDir, env: {} });
    expect(derived.ok && derived.command.argv.slice(0, 5)).toEqual([
      "pi",
      "--session",
      join(dir, "custom", "s.jsonl"),
      "--session-dir",
      join(dir, "custom"),
    ]);
    expect(
      launchCommandFor(manifest(worktree, { model: undefined }), { piCommand: ["pi"], agentDir, env: {} }),
    ).toMatchObject({ ok: false, code: "no_launch_settings" });
    expect(
      launchCommandFor(manifest(worktree, { sessionFile: "a\nb" }), { piCommand: ["pi"], agentDir, env: {} }),
    ).toMatchObject({ ok: false, code: "bad_command" });
  });

  it("exits at once, saying so, when run again while its Pi lives; takes over a stale lock", async () => {
    const worktree = join(dir, "wt");
    mkdirSync(worktree);
    await prepare(derive(manifest(worktree)));
    const hold = join(dir, "hold");
    writeFileSync(hold, "");
    const recordTo = join(dir, "first.json");
    const first = spawn("/bin/sh", [files.script], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", RECORD_TO: recordTo, HOLD: hold },
      stdio: "ignore",
    });
    const firstPid = first.pid ?? 0;
    await waitFor(() => existsSync(recordTo), { description: "the first Pi" });
    expect(readFileSync(files.lock, "utf8")).toBe(`${firstPid}\n`);

    const second = typed({ RECORD_TO: join(dir, "second.json") });
    expect(second.status).toBe(0);
    expect(second.stdout).toContain(
      `The Pi of handoff ${ID} already runs (pid ${firstPid}), so no second one was started.`,
    );
    expect(existsSync(join(dir, "second.json"))).toBe(false);
    expect(await readLauncherNote(files.refused, "tok1")).toEqual({ pid: firstPid });

    // The first Pi exits; its lock stays behind (typed, Pi replaced the launcher) and is stale now.
    const exited = new Promise((resolve) => first.on("exit", resolve));
    rmSync(hold);
    await exited;
    await writeLauncherParams(files, { token: "tok2", command: derive(manifest(worktree)) });
    const third = typed({ RECORD_TO: join(dir, "third.json") });
    expect(third.status, String(third.stderr)).toBe(0);
    const thirdPid = JSON.parse(readFileSync(join(dir, "third.json"), "utf8")).pid;
    expect(await readLauncherNote(files.started, "tok2")).toEqual({ pid: thirdPid });
  });

  it("as the window's command: waits for its params, runs Pi, then becomes the shell it was given", async () => {
    const worktree = join(dir, "wt");
    mkdirSync(worktree);
    await writeLauncher({
      handoffId: ID,
      files,
      ownerPid: process.pid,
      paramsWaitMs: 10_000,
      recoveryCommand: "pi-handoff",
    });
    const after = join(dir, "after");
    const recordTo = join(dir, "rec.json");
    const hold = join(dir, "hold");
    writeFileSync(hold, "");
    const window = spawn(
      "/bin/sh",
      [files.script, "window", "/bin/sh", "-c", `echo "$$ $PI_HANDOFF_PORTS" > '${after}'`],
      {
        cwd: worktree,
        env: { PATH: process.env.PATH ?? "", RECORD_TO: recordTo, HOLD: hold },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    window.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => window.on("exit", resolve));
    await waitFor(() => out.includes("its Pi starts here in a moment"), { description: "the waiting launcher" });
    // Params alone (written before the launch step records launching) do not start it: the go-ahead does.
    await writeLauncherParams(files, { token: "w1", command: derive({ ...manifest(worktree), ports: [4100, 4101] }) });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(recordTo)).toBe(false);
    await releaseWindowLauncher(files, "w1");
    await waitFor(() => existsSync(recordTo), { description: "Pi under the window's launcher" });
    // An interrupt while Pi runs does not end the pane's own process.
    process.kill(window.pid ?? 0, "SIGINT");
    await new Promise((resolve) => setTimeout(resolve, 200));
    rmSync(hold);
    expect(await exited).toBe(0);
    const recorded = JSON.parse(readFileSync(recordTo, "utf8"));
    expect(recorded.cwd).toBe(worktree);
    // The launcher ran Pi as its child, released its lock, then exec'd the shell (same pid).
    expect(await readLauncherNote(files.started, "w1")).toEqual({ pid: window.pid });
    expect(recorded.pid).not.toBe(window.pid);
    // ... which has the handoff's ports too, for a server started there after Pi.
    expect(readFileSync(after, "utf8").trim()).toBe(`${window.pid} 4100,4101`);
    expect(existsSync(files.lock)).toBe(false);
  });

  it.each(["cancelled", "owner gone", "wait over"] as const)(
    "as the window's command: starts nothing when %s, and leaves the shell",
    async (why) => {
      const owner =
        why === "owner gone"
          ? spawnSync("/bin/sh", ["-c", "echo $$"], { encoding: "utf8" }).stdout.trim()
          : String(process.pid);
      await writeLauncher({
        handoffId: ID,
        files,
        ownerPid: Number(owner),
        paramsWaitMs: why === "wait over" ? 1_000 : 20_000,
        // Not on PATH: this copy's launcher by its quoted path, never evaluated by the script.
        recoveryCommand: RECOVERY_BY_PATH,
      });
      // Params exist in every case (a launch that stopped after writing them): only the go-ahead starts Pi.
      await writeLauncherParams(files, { token: "c1", command: derive(manifest(join(dir, "wt"))) });
      if (why === "cancelled")
        await cancelLauncher(files, "Handoff x failed at the fork step, so no Pi was started here.");
      const after = join(dir, "after");
      const run = spawnSync("/bin/sh", [files.script, "window", "/bin/sh", "-c", `echo shell > '${after}'`], {
        cwd: dir,
        encoding: "utf8",
        timeout: 15_000,
      });
      expect(run.stdout).toContain(
        why === "cancelled"
          ? "Handoff x failed at the fork step, so no Pi was started here."
          : why === "owner gone"
            ? `[pi-handoff] The handoff stopped before starting Pi here (see: ${RECOVERY_BY_PATH} list).\n`
            : `[pi-handoff] Gave up waiting for handoff ${ID} to start Pi here (see: ${RECOVERY_BY_PATH} list).\n`,
      );
      expect(readFileSync(after, "utf8")).toBe("shell\n");
      expect(existsSync(files.started)).toBe(false);
    },
  );

  it.each([
    ["all succeed", ["true"], true],
    ["one fails", ["true", "false"], false],
  ])("starts Pi only when the postCreate commands %s", async (_label, commands, started) => {
    const worktree = join(dir, "wt 'q'");
    mkdirSync(worktree);
    const hooks = postCreateFiles(join(store, `${ID}.json`));
    await writeRunner(hooks, { handoffId: ID, mainCheckout: dir, worktreePath: worktree, branch: "feat/x" });
    await prepare(derive(manifest(worktree)), "tok1", { prelude: postCreatePrelude(hooks, commands) });
    const recordTo = join(dir, "rec.json");
    const run = typed({ RECORD_TO: recordTo });
    expect(existsSync(recordTo)).toBe(started);
    expect(run.status).toBe(started ? 0 : 1);
    expect((await readPostCreateStatus(hooks.statusFile))?.exitStatus).toBe(started ? 0 : 1);
    // A failure releases the lock, so the user can run the line again once it is fixed; typed (as on
    // Herdr), that line is the one above, and the pane says so with the line itself.
    if (!started) {
      expect(existsSync(files.lock)).toBe(false);
      expect(String(run.stdout).split("\n").slice(-3)).toEqual([
        "[postCreate 2/2] failed with exit status 1; Pi was not started.",
        `[pi-handoff] To run the postCreate commands again and then start Pi, run the line above again: ${await typedLauncherLine(files, ID)}`,
        "",
      ]);
    }
  });

  it("gives postCreate and Pi the handoff's ports and variables byte for byte, whatever the values hold", async () => {
    const worktree = join(dir, "wt");
    mkdirSync(worktree);
    // Every hostile word as a value: quotes, $(), backticks, backslashes, globs, the empty string.
    const env = Object.fromEntries(hostileWords(join(dir, "CANARY")).map((word, index) => [`HOSTILE_${index}`, word]));
    const expected = { PI_HANDOFF_PORT: "4100", PI_HANDOFF_PORTS: "4100,4107", ...env };
    const m = { ...manifest(worktree), ports: [4100, 4107], env };
    const hooks = postCreateFiles(join(store, `${ID}.json`));
    await writeRunner(hooks, { handoffId: ID, mainCheckout: dir, worktreePath: worktree, branch: "feat/x" });
    // The postCreate command dumps its environment NUL-separated, as the kernel holds it.
    const dump = join(dir, "post-create.env");
    await prepare(derive(m), "tok1", {
      prelude: postCreatePrelude(hooks, [
        `${shellQuote(process.execPath)} -e ${shellQuote(DUMP_ENV)} > ${shellQuote(dump)}`,
      ]),
    });
    const recordTo = join(dir, "rec.json");
    const run = typed({ RECORD_TO: recordTo, HOSTILE_1: "from the shell" });
    expect(run.status, String(run.stderr)).toBe(0);
    expect(JSON.parse(readFileSync(recordTo, "utf8")).handoffEnv).toEqual(expected);
    const seen = Object.fromEntries(
      readFileSync(dump, "utf8")
        .split("\0")
        .filter((entry) => /^(PI_HANDOFF_PORTS?|HOSTILE_\d+)=/.test(entry))
        .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
    );
    expect(seen).toEqual(expected);
    expect(existsSync(join(dir, "CANARY"))).toBe(false);
  });

  /**
   * A stand-in for Pi packaged as Pi is: an entry that `require`s a runtime whose static import
   * (a chunk) records when it loaded, then runs `main`, which records as the recorder does.
   */
  function packagedPi(): { entry: string; loadedTo: string } {
    const pkg = join(dir, "pi pkg 'p' #1%");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, "cli.mjs"),
      'import { createRequire } from "node:module";\ncreateRequire(import.meta.url)("./runtime.mjs");\n',
    );
    writeFileSync(join(pkg, "runtime.mjs"), 'import { main } from "./chunk.mjs";\nmain();\n');
    writeFileSync(
      join(pkg, "chunk.mjs"),
      `import { createRequire } from "node:module";
import fs from "node:fs";
fs.writeFileSync(process.env.LOADED_TO, JSON.stringify({ pid: process.pid, cwd: process.cwd() }));
export function main() {
  fs.writeFileSync(process.env.RECORD_TO + ".main", JSON.stringify({ execArgv: process.execArgv,
    warm: Object.keys(process.env).filter((k) => k.startsWith("PI_HANDOFF_WARM")), pwd: process.env.PWD }));
  createRequire(import.meta.url)(${JSON.stringify(recorder)});
}
`,
    );
    return { entry: join(pkg, "cli.mjs"), loadedTo: join(dir, "loaded.json") };
  }

  /** The stand-in Pi's note that its modules loaded, once written whole (it is not written atomically). */
  function loadedEarly(loadedTo: string): Promise<{ pid: number; cwd: string }> {
    return waitFor(
      () => {
        try {
          return JSON.parse(readFileSync(loadedTo, "utf8")) as { pid: number; cwd: string };
        } catch {
          return undefined;
        }
      },
      { description: "Pi's modules loaded early" },
    );
  }

  function environment(piCommand: string[], agentDir = join(dir, "agent 'a'")): LaunchEnvironment {
    return { piCommand, agentDir, env: { PI_OFFLINE: "1", SECRET_TOKEN: "do-not-forward" } };
  }

  /** The window's launcher with a warm start, running until it has become the shell after Pi. */
  async function warmWindow(m: Manifest, entry: string, env: Record<string, string>) {
    const warm = warmStartFor(m, environment([process.execPath, entry]));
    if (warm === undefined) throw new Error("no warm start for this Node");
    await writeLauncher({
      handoffId: ID,
      files,
      ownerPid: process.pid,
      paramsWaitMs: 20_000,
      warm,
      recoveryCommand: "pi-handoff",
    });
    const after = join(dir, "after");
    const window = spawn("/bin/sh", [files.script, "window", "/bin/sh", "-c", `echo shell > '${after}'`], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    window.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    window.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => window.on("exit", resolve));
    return { window, exited, after, output: () => out };
  }

  function derived(m: Manifest, env: LaunchEnvironment): LaunchCommand {
    const result = launchCommandFor(m, env);
    if (!result.ok) throw new Error(result.message);
    return result.command;
  }

  it("as the window's command with a warm start: Pi's modules load before the launch step, and that Pi runs it", async () => {
    const worktree = join(dir, "wt 'w'");
    mkdirSync(worktree);
    const { entry, loadedTo } = packagedPi();
    const m = { ...manifest(worktree), ports: [4100, 4101], env: { SETTING: "it's $(x)" } };
    const recordTo = join(dir, "rec.json");
    const hold = join(dir, "hold");
    writeFileSync(hold, "");
    const run = await warmWindow(m, entry, { RECORD_TO: recordTo, LOADED_TO: loadedTo, HOLD: hold });
    // Loaded while nothing of the launch step exists yet: no params, no go-ahead.
    const loaded = await loadedEarly(loadedTo);
    expect(existsSync(files.params)).toBe(false);
    expect(existsSync(recordTo)).toBe(false);
    const command = derived(m, environment([process.execPath, entry]));
    await writeLauncherParams(files, { token: "w1", command, warm: true });
    await releaseWindowLauncher(files, "w1");
    await waitFor(() => existsSync(recordTo), { description: "the warm Pi running" });
    const recorded = JSON.parse(readFileSync(recordTo, "utf8"));
    // The same process that loaded early, with the launch step's words, place and variables.
    expect(recorded.pid).toBe(loaded.pid);
    expect(recorded.argv).toEqual(command.argv.slice(2));
    expect(recorded.cwd).toBe(worktree);
    expect(recorded).toMatchObject({ agentDir: join(dir, "agent 'a'"), handoffId: ID, offline: "1" });
    expect(recorded.handoffEnv).toEqual({ PI_HANDOFF_PORT: "4100", PI_HANDOFF_PORTS: "4100,4101" });
    const environ = readFileSync(`/proc/${recorded.pid}/environ`, "utf8").split("\0");
    expect(environ).toContain("SETTING=it's $(x)");
    // What started it is gone before Pi runs (its variables and its --import), and PWD is the
    // worktree, as the launcher's `cd` leaves it for a cold start.
    expect(JSON.parse(readFileSync(`${recordTo}.main`, "utf8"))).toEqual({ execArgv: [], warm: [], pwd: worktree });
    expect(existsSync(files.warmGo)).toBe(false);
    expect(await readLauncherNote(files.warmed, "w1")).toEqual({ pid: recorded.pid });
    rmSync(hold);
    expect(await run.exited).toBe(0);
    expect(readFileSync(run.after, "utf8")).toBe("shell\n");
    expect(await readLauncherNote(files.started, "w1")).toEqual({ pid: run.window.pid });
    expect(existsSync(files.lock)).toBe(false);
  });

  it.each(["refuses other variables", "was killed", "was not allowed"] as const)(
    "as the window's command: a warm Pi that %s leaves Pi to a cold start",
    async (why) => {
      const worktree = join(dir, "wt");
      mkdirSync(worktree);
      const { entry, loadedTo } = packagedPi();
      const m = manifest(worktree);
      const recordTo = join(dir, "rec.json");
      const run = await warmWindow(m, entry, { RECORD_TO: recordTo, LOADED_TO: loadedTo });
      const warmPid = (await loadedEarly(loadedTo)).pid;
      rmSync(loadedTo);
      if (why === "was killed") process.kill(warmPid, "SIGKILL");
      // Another agent dir than the one the warm process started with: its modules saw the old one.
      const env = environment(
        [process.execPath, entry],
        why === "refuses other variables" ? join(dir, "other") : undefined,
      );
      await writeLauncherParams(files, { token: "c1", command: derived(m, env), warm: why !== "was not allowed" });
      await releaseWindowLauncher(files, "c1");
      expect(await run.exited, run.output()).toBe(0);
      const recorded = JSON.parse(readFileSync(recordTo, "utf8"));
      expect(recorded.pid).not.toBe(warmPid);
      expect(JSON.parse(readFileSync(loadedTo, "utf8")).pid).toBe(recorded.pid);
      expect(recorded.agentDir).toBe(why === "refuses other variables" ? join(dir, "other") : join(dir, "agent 'a'"));
      expect(existsSync(files.warmGo)).toBe(false);
      expect(existsSync(files.warmed)).toBe(false);
      expect(() => process.kill(warmPid, 0)).toThrow();
      expect(readFileSync(run.after, "utf8")).toBe("shell\n");
    },
  );

  it("as the window's command: a warm Pi that is never let go ends with its launcher", async () => {
    const { entry, loadedTo } = packagedPi();
    const run = await warmWindow(manifest(join(dir, "wt")), entry, { LOADED_TO: loadedTo });
    const warmPid = (await loadedEarly(loadedTo)).pid;
    await cancelLauncher(files, "Handoff x failed at the fork step, so no Pi was started here.");
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain("Handoff x failed at the fork step");
    expect(() => process.kill(warmPid, 0)).toThrow();
    expect(readFileSync(run.after, "utf8")).toBe("shell\n");
    expect(existsSync(files.started)).toBe(false);
  });

  it("warms only a child started as this Pi is, with every variable it is given", () => {
    const m = { ...manifest(join(dir, "wt")), ports: [4100], env: { PI_OFFLINE: "from settings" } };
    const warm = warmStartFor(m, environment([process.execPath, "/pi/cli.js"]));
    expect(warm?.argv).toEqual([
      process.execPath,
      "--import",
      expect.stringMatching(/^file:\/\/.*\/warm-gate\.mjs$/),
      "/pi/cli.js",
    ]);
    // The handoff's own, then Pi's: Pi's PI_OFFLINE wins, as `env` after the exports does.
    expect(warm?.variables).toEqual([
      ["PI_HANDOFF_PORT", "4100"],
      ["PI_HANDOFF_PORTS", "4100"],
      ["PI_OFFLINE", "1"],
      ["PI_CODING_AGENT_DIR", join(dir, "agent 'a'")],
      ["PI_HANDOFF_ID", ID],
    ]);
    expect(warmStartFor(m, environment(["/other/node", "/pi/cli.js"]))).toBeUndefined();
    expect(warmStartFor(m, environment([process.execPath]))).toBeUndefined();
    expect(warmStartFor(m, environment([process.execPath, "/pi/cli.js", "--flag"]))).toBeUndefined();
  });

  it("refuses a recorded variable that could not be passed as data, and a handoff without any exports nothing", () => {
    const worktree = join(dir, "wt");
    for (const value of ["a\nb", "nul\u0000x"]) {
      expect(
        launchCommandFor({ ...manifest(worktree), env: { BAD: value } }, { piCommand: ["pi"], agentDir: dir, env: {} }),
      ).toMatchObject({ ok: false, code: "bad_command" });
    }
    expect(derive(manifest(worktree)).handoffEnv).toEqual([]);
    expect(() => exportLines([["NOT-A-NAME", "x"]])).toThrow(/not a variable name/);
  });

  it("keeps the typed line short however deep the agent dir is, and the line still starts Pi", async () => {
    const deep = join(dir, ...Array.from({ length: 40 }, (_, i) => `level-${i}-${"d".repeat(20)}`));
    mkdirSync(deep, { recursive: true });
    files = launcherFiles(join(deep, `${ID}.json`));
    const worktree = join(dir, "wt");
    mkdirSync(worktree);
    await prepare(derive(manifest(worktree)));
    const line = await typedLauncherLine(files, ID);
    expect(files.script.length).toBeGreaterThan(1024);
    expect(Buffer.byteLength(line)).toBeLessThanOrEqual(MAX_DIRECT_LINE);
    const recordTo = join(dir, "rec.json");
    const run = spawnSync("/bin/bash", ["--norc", "--noprofile", "-c", line], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", RECORD_TO: recordTo },
      encoding: "utf8",
      timeout: 15_000,
    });
    expect(run.status, String(run.stderr)).toBe(0);
    expect(JSON.parse(readFileSync(recordTo, "utf8")).argv).toContain("--approve");
    // A launcher with a short path is named directly.
    expect(await typedLauncherLine(launcherFiles("/a/b.json"), ID)).toBe("sh /a/b.launch.sh");
    // Retired, the handoff's launch files and its link go; its manifest and others' files stay.
    const link = line.slice("sh ".length).replace(/^'|'$/g, "");
    expect(readlinkSync(link)).toBe(files.script);
    writeFileSync(join(deep, `${ID}.json`), "{}");
    writeFileSync(join(deep, "other-id.launch.sh"), "");
    // A fork begun beside the worktree step that a kill left in its staging directory goes too.
    mkdirSync(join(deep, `${ID}.fork`));
    writeFileSync(join(deep, `${ID}.fork`, "2026-12-02T00-00-00-000Z_x.jsonl"), "{}\n");
    mkdirSync(join(deep, "other-id.fork"));
    const present = [files.script, files.params, files.started, files.lock].filter((file) => existsSync(file));
    const { deleted, left } = await deleteLaunchFiles(join(deep, `${ID}.json`), ID);
    expect(left).toEqual([]);
    // lstat: the link itself, not what it names (the script went first).
    expect(lstatSync(link, { throwIfNoEntry: false })).toBeUndefined();
    expect(readdirSync(deep).sort()).toEqual([`${ID}.json`, "other-id.fork", "other-id.launch.sh"]);
    expect(deleted).toBe(present.length + 2);
    expect(await deleteLaunchFiles(join(deep, `${ID}.json`), ID)).toEqual({ deleted: 0, left: [] });
    // A link of that name that names something else is not this handoff's: it stays.
    symlinkSync(join(dir, "elsewhere"), link);
    expect(await deleteLaunchFiles(join(deep, `${ID}.json`), ID)).toEqual({ deleted: 0, left: [] });
    expect(readlinkSync(link)).toBe(join(dir, "elsewhere"));
    unlinkSync(link);
  });
});
