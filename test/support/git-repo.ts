/**
 * Real git repositories in temp dirs for tests.
 *
 * Invariants:
 * - Everything lives under one realpath'd directory in os.tmpdir(); `cleanup()` removes it.
 * - git never reads the real ~/.gitconfig or system config, nor inherited `GIT_*` variables.
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";

const GIT_TIMEOUT_MS = 30_000;

/** A new empty directory under os.tmpdir(), realpath'd (macOS /tmp is a symlink, git reports real paths). */
export function makeTempDir(prefix: string): string {
  return realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
}

/** Removes a temp dir made by `makeTempDir`; tolerant of it being gone already. */
export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * `process.env` without inherited `GIT_*` variables, with `home` as HOME and XDG config, no system
 * config, a fixed identity, and `init.defaultBranch=main` (as `-c` through `GIT_CONFIG_COUNT`).
 */
export function isolatedGitEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.toUpperCase().startsWith("GIT_")) env[key] = value;
  }
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "Handoff Test",
    GIT_AUTHOR_EMAIL: "handoff-test@example.invalid",
    GIT_COMMITTER_NAME: "Handoff Test",
    GIT_COMMITTER_EMAIL: "handoff-test@example.invalid",
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "init.defaultBranch",
    GIT_CONFIG_VALUE_0: "main",
  };
}

export interface TempRepoOptions {
  /** Commits after the initial one; commit N adds `file-N.txt` with message `commit N`. Default 0. */
  extraCommits?: number;
  /** Prefix of the temp dir. */
  prefix?: string;
}

export interface TempRepo {
  /** The main checkout, `<dir>/repo`. */
  root: string;
  /** The temp dir holding `repo`, `home` and anything else a test creates (worktrees). */
  dir: string;
  /** The isolated HOME. */
  home: string;
  /** The environment every git call of this repo uses; pass it to code under test. */
  env: NodeJS.ProcessEnv;
  /** Runs git (no shell) in `root` or `cwd`; returns stdout without its trailing newline; throws on failure. */
  run(args: readonly string[], options?: { cwd?: string }): string;
  /** Writes `file` (relative to `cwd`, default `root`), stages it and commits; returns the new HEAD. */
  commitFile(file: string, content: string, message: string, options?: { cwd?: string }): string;
  /** Removes `dir`. */
  cleanup(): void;
}

/** A real repository on `main` with an initial commit of README.md, in an isolated environment. */
export function createTempRepo(options: TempRepoOptions = {}): TempRepo {
  const dir = makeTempDir(options.prefix ?? "pi-handoff-git-");
  const home = path.join(dir, "home");
  const root = path.join(dir, "repo");
  mkdirSync(home);
  mkdirSync(root);
  const env = isolatedGitEnv(home);

  const run = (args: readonly string[], runOptions: { cwd?: string } = {}): string =>
    execFileSync("git", args, {
      cwd: runOptions.cwd ?? root,
      env,
      encoding: "utf8",
      timeout: GIT_TIMEOUT_MS,
      stdio: ["ignore", "pipe", "pipe"],
    }).replace(/\n$/, "");

  const commitFile = (file: string, content: string, message: string, commitOptions: { cwd?: string } = {}): string => {
    const cwd = commitOptions.cwd ?? root;
    mkdirSync(path.dirname(path.join(cwd, file)), { recursive: true });
    writeFileSync(path.join(cwd, file), content);
    run(["add", "--", file], { cwd });
    run(["commit", "--quiet", "--no-verify", "-m", message], { cwd });
    return run(["rev-parse", "HEAD"], { cwd });
  };

  try {
    run(["init", "--quiet"]);
    commitFile("README.md", "# test repository\n", "initial commit");
    for (let index = 1; index <= (options.extraCommits ?? 0); index += 1) {
      commitFile(`file-${index}.txt`, `${index}\n`, `commit ${index}`);
    }
  } catch (error) {
    removeTempDir(dir);
    throw error;
  }

  return { root, dir, home, env, run, commitFile, cleanup: () => removeTempDir(dir) };
}

/**
 * A server environment whose git speaks German, as a user's may: the distribution's git (built with
 * its translations) first on PATH and a de_DE.UTF-8 locale compiled into `dir` by localedef and read
 * through LOCPATH, so no system locale needs installing. Throws when this machine's git cannot.
 */
export async function germanGitServerEnv(dir: string): Promise<Record<string, string>> {
  const bin = path.join(dir, "german-git-bin");
  mkdirSync(bin, { recursive: true });
  if (!existsSync(path.join(bin, "git"))) symlinkSync("/usr/bin/git", path.join(bin, "git"));
  // Compiling a locale takes seconds: once per machine, shared by the tests, moved into place whole.
  const locales = path.join(os.tmpdir(), "pi-handoff-test-locales");
  const compiled = path.join(locales, "de_DE.utf8");
  if (!existsSync(compiled)) {
    mkdirSync(locales, { recursive: true });
    const partial = mkdtempSync(path.join(locales, "partial-"));
    execFileSync("localedef", ["-i", "de_DE", "-f", "UTF-8", path.join(partial, "de_DE.utf8")], {
      stdio: "ignore",
      timeout: 120_000,
    });
    try {
      renameSync(path.join(partial, "de_DE.utf8"), compiled);
    } catch {
      // Another test compiled it first.
    }
    rmSync(partial, { recursive: true, force: true });
  }
  const env = {
    PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    LOCPATH: locales,
    LANG: "de_DE.UTF-8",
  };
  const spoken = spawnSync("git", ["no-such-command"], {
    env: { ...process.env, ...env, LC_ALL: "", LC_MESSAGES: "" },
    encoding: "utf8",
    timeout: 10_000,
  });
  if (!/ist kein Git-Befehl/.test(spoken.stderr)) {
    throw new Error(
      `This machine's git does not speak German (it said ${JSON.stringify(spoken.stderr.trim())}); install Debian's git and locales.`,
    );
  }
  return env;
}
