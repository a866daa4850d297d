/**
 * The one git runner (src/git/runner.ts) with real git: exit codes as data, bytes in and out
 * unchanged, deadlines, a call that ends with git whatever it left running, arguments that would
 * start a program refused,
 * and the carried patch's size bound.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runGit, runGitInEach } from "../../src/git/runner.ts";
import { CheckoutGit } from "../../src/git/checkout-git.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { isProcessAlive } from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";

let repo: TempRepo | undefined;
afterEach(() => {
  repo?.cleanup();
  repo = undefined;
});

describe("runGit", () => {
  it("returns a non-zero exit as data, with git's stderr", async () => {
    repo = createTempRepo();
    const run = await runGit(repo.root, ["rev-parse", "--verify", "--quiet", "refs/heads/nope"], {
      timeoutMs: 10_000,
      env: repo.env,
    });
    expect(run.exitCode).toBe(1);
    expect(run.stdout.length).toBe(0);
  });

  it("passes bytes to stdin and returns stdout bytes exactly (not UTF-8)", async () => {
    repo = createTempRepo();
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x63, 0x61, 0x66, 0xe9, 0x0a]);
    const hashed = await runGit(repo.root, ["hash-object", "-w", "--stdin"], {
      timeoutMs: 10_000,
      env: repo.env,
      input: bytes,
    });
    expect(hashed.exitCode).toBe(0);
    const sha = hashed.stdout.toString("utf8").trim();
    const shown = await runGit(repo.root, ["cat-file", "blob", sha], { timeoutMs: 10_000, env: repo.env });
    expect(Buffer.compare(shown.stdout, bytes)).toBe(0);
  });

  it("stops a call at its deadline and names the command", async () => {
    repo = createTempRepo();
    // git waiting for stdin that never ends stands for any git that hangs.
    await expect(runGit(repo.root, ["hash-object", "--stdin"], { timeoutMs: 300, env: repo.env })).rejects.toThrow(
      `git hash-object timed out after 0.3 s in ${repo.root}.`,
    );
  });
});

describe("runGit, what it will not do", () => {
  it("says a directory that does not exist as such, in one sentence", async () => {
    repo = createTempRepo();
    const gone = join(repo.dir, "gone");
    await expect(runGit(gone, ["status"], { timeoutMs: 10_000, env: repo.env })).rejects.toThrow(
      new Error(`git status could not run in ${gone}: the directory does not exist.`),
    );
  });

  it("ends a finished call although a process git started keeps its output open", async () => {
    repo = createTempRepo();
    const pidFile = join(repo.dir, "hook.pid");
    // The hook leaves a background process holding git's stdout and stderr, and returns at once.
    const hook = join(repo.root, ".git", "hooks", "post-checkout");
    writeFileSync(hook, `#!/bin/sh\nsleep 30 &\necho $! > '${pidFile}'\nexit 0\n`, { mode: 0o755 });
    try {
      const run = await runGit(repo.root, ["checkout", "-q", "-b", "feat/held"], { timeoutMs: 10_000, env: repo.env });
      expect(run.exitCode).toBe(0);
      expect(repo.run(["symbolic-ref", "--short", "HEAD"])).toBe("feat/held");
    } finally {
      const pid = Number(readFileSync(pidFile, "utf8").trim());
      if (isProcessAlive(pid)) process.kill(pid, "SIGKILL");
    }
  });

  it.each([
    [
      ["fetch", "--upload-pack=touch canary", "origin"],
      'git fetch was not run: the argument "--upload-pack=touch canary"',
    ],
    [
      ["-c", "core.sshCommand=touch canary", "fetch", "origin"],
      'git fetch was not run: the argument "-c core.sshCommand=touch canary"',
    ],
    [
      ["-ccore.fsmonitor=touch canary", "status"],
      'git status was not run: the argument "-c core.fsmonitor=touch canary"',
    ],
    [["-c", "Alias.x=!touch canary", "x"], 'git x was not run: the argument "-c Alias.x=!touch canary"'],
    [["--config-env=core.pager=X", "log"], 'git log was not run: the argument "--config-env=core.pager=X"'],
  ])("refuses %j before git runs, in one sentence", async (args, said) => {
    repo = createTempRepo();
    await expect(runGit(repo.root, args, { timeoutMs: 10_000, env: repo.env })).rejects.toThrow(
      new Error(`${said} would make git start a program.`),
    );
    expect(existsSync(join(repo.root, "canary"))).toBe(false);
  });

  it("passes such words through after --end-of-options, where git reads them as names", async () => {
    repo = createTempRepo();
    const run = await runGit(repo.root, ["rev-parse", "--verify", "--quiet", "--end-of-options", "--upload-pack=x"], {
      timeoutMs: 10_000,
      env: repo.env,
    });
    expect(run.exitCode).toBe(1);
  });
});

describe("carrying a patch larger than the bound", () => {
  it("is refused with its size, before the patch is read", async () => {
    repo = createTempRepo();
    writeFileSync(join(repo.root, "README.md"), "x".repeat(4096));
    const git = new CheckoutGit({ env: repo.env, maxPatchBytes: 1024 });
    await expect(git.snapshotChanges(repo.root, "tracked")).rejects.toThrow(
      `git diff in ${repo.root} made a patch of more than 0 MiB; that is too much to carry.`,
    );
  });
});

describe("runGitInEach", () => {
  interface FakeGit {
    dir: string;
    run(
      checkouts: string[],
      parallel: number,
      timeoutMs?: number,
    ): Promise<({ exitCode: number; stdout: string } | undefined)[]>;
  }

  /** A temp dir whose `bin/git` is `script` (sh), the batch run with it first on PATH; what each directory answered. */
  function withFakeGit(script: (dir: string) => string, test: (fake: FakeGit) => Promise<void>): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), "phw-git-each-"));
    const bin = join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "git"), `#!/bin/sh\n${script(dir)}`, { mode: 0o755 });
    const run = async (checkouts: string[], parallel: number, timeoutMs = 20_000) =>
      (
        await runGitInEach(checkouts, ["status"], {
          timeoutMs,
          env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` },
          parallel,
        })
      ).map((each) => each && { exitCode: each.exitCode, stdout: each.stdout.toString() });
    return test({ dir, run }).finally(() => rmSync(dir, { recursive: true, force: true }));
  }

  it("ends when git has answered, not when a process git left running lets go of the batch's other pipes", () =>
    // A git that starts a lasting process of its own (as git status starts an fsmonitor daemon) with
    // its standard streams closed, as git does, but every other descriptor it inherited still open.
    withFakeGit(
      (dir) =>
        `sleep 30 </dev/null >/dev/null 2>&1 &\necho $! >> '${join(dir, "pids")}'\nprintf 'answer from %s' "$PWD"\n`,
      async ({ dir, run }) => {
        const pids = join(dir, "pids");
        const checkouts = ["a", "b", "c"].map((name) => {
          mkdirSync(join(dir, name));
          return join(dir, name);
        });
        expect(await run(checkouts, 3)).toEqual(
          checkouts.map((path) => ({ exitCode: 0, stdout: `answer from ${path}` })),
        );
        // Answered while every lasting process still runs: the batch did not wait for them.
        const started = readFileSync(pids, "utf8").trim().split("\n").map(Number);
        expect(started).toHaveLength(3);
        expect(started.every((pid) => isProcessAlive(pid))).toBe(true);
        for (const pid of started) process.kill(pid, "SIGKILL");
      },
    ));

  it("answers a directory that is gone, or is a file, without starting git there, and still asks the others", () =>
    withFakeGit(
      (dir) => `echo "$PWD" >> '${join(dir, "calls")}'\nprintf 'answer from %s' "$PWD"\n`,
      async ({ dir, run }) => {
        const present = join(dir, "present");
        mkdirSync(present);
        const file = join(dir, "a-file");
        writeFileSync(file, "not a directory\n");
        expect(await run([join(dir, "gone"), present, file], 1)).toEqual([
          { exitCode: 128, stdout: "" },
          { exitCode: 0, stdout: `answer from ${present}` },
          { exitCode: 128, stdout: "" },
        ]);
        expect(readFileSync(join(dir, "calls"), "utf8")).toBe(`${present}\n`);
      },
    ));

  it("at its deadline answers what was seen and ends every git it started, the whole batch's process group", () =>
    withFakeGit(
      (dir) =>
        `case "$PWD" in *slow) echo $$ >> '${join(dir, "pids")}'; exec sleep 300;; esac\nprintf 'answer from %s' "$PWD"\n`,
      async ({ dir, run }) => {
        const checkouts = ["quick", "slow"].map((name) => {
          mkdirSync(join(dir, name));
          return join(dir, name);
        });
        expect(await run(checkouts, 2, 1_000)).toEqual([
          { exitCode: 0, stdout: `answer from ${join(dir, "quick")}` },
          undefined,
        ]);
        const [hung] = readFileSync(join(dir, "pids"), "utf8").trim().split("\n").map(Number);
        expect(hung).toBeGreaterThan(0);
        try {
          await waitFor(() => !isProcessAlive(hung ?? 0), { timeoutMs: 10_000, description: "the hung git to end" });
        } finally {
          if (hung !== undefined && isProcessAlive(hung)) process.kill(hung, "SIGKILL");
        }
      },
    ));
});
