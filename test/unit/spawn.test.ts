/**
 * The process core (src/process/spawn.ts) with real processes: the value it answers for each end
 * (exited, timed out, aborted, not started), stdin as bytes or left open, further output pipes,
 * and a process group stopped as a whole.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { spawnProcess } from "../../src/process/spawn.ts";
import { isProcessAlive } from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";

const dir = mkdtempSync(join(tmpdir(), "phw-spawn-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the process core", () => {
  it("writes stdin's bytes and closes it, and keeps every output pipe's bytes apart", async () => {
    const bytes = Buffer.from([0xff, 0x00, 0x0a, 0x63]);
    const run = await spawnProcess("sh", ["-c", "cat; printf e >&2; printf three >&3; exit 5"], {
      stdin: bytes,
      extraPipes: 1,
      timeoutMs: 10_000,
    });
    expect(run).toEqual({
      kind: "exited",
      exitCode: 5,
      signal: null,
      stdout: bytes,
      stderr: Buffer.from("e"),
      extra: [Buffer.from("three")],
    });
  });

  it("answers a program or a directory that is not there with its errno, never a throw", async () => {
    const missing = await spawnProcess(join(dir, "no-such-program"), [], { stdin: "ignore", timeoutMs: 10_000 });
    expect(missing).toMatchObject({ kind: "not_started", errno: "ENOENT" });
    const nul = await spawnProcess("sh", ["-c", "a\0b"], { stdin: "ignore", timeoutMs: 10_000 });
    expect(nul).toMatchObject({ kind: "not_started", errno: "ERR_INVALID_ARG_VALUE" });
  });

  it("stops a process whose stdin is left open at its deadline, and one whose signal aborts", async () => {
    const timedOut = await spawnProcess("cat", [], { stdin: "open", timeoutMs: 200 });
    expect(timedOut).toMatchObject({ kind: "timed_out", exitCode: null, signal: "SIGTERM" });
    const controller = new AbortController();
    const aborted = spawnProcess("sleep", ["30"], { stdin: "ignore", timeoutMs: 60_000, signal: controller.signal });
    controller.abort();
    expect(await aborted).toMatchObject({ kind: "aborted", signal: "SIGTERM" });
  });

  it("signals a group of its own as a whole: a process the leader started dies with it", async () => {
    const pidFile = join(dir, "grandchild.pid");
    const run = await spawnProcess("sh", ["-c", `sleep 300 & echo $! > '${pidFile}'; wait`], {
      stdin: "ignore",
      timeoutMs: 500,
      ownProcessGroup: true,
    });
    expect(run.kind).toBe("timed_out");
    const grandchild = Number(readFileSync(pidFile, "utf8").trim());
    try {
      await waitFor(() => !isProcessAlive(grandchild), { timeoutMs: 10_000, description: "the grandchild to end" });
    } finally {
      if (isProcessAlive(grandchild)) process.kill(grandchild, "SIGKILL");
    }
  });

  it.each(["SIGINT", "SIGTERM"] as const)(
    "a group of its own ends with this process: %s to it reaches what the group runs, and it still ends by that signal",
    async (name) => {
      // Ctrl-C on `pi-handoff land --all` must not leave the repository's check running orphaned.
      // The sleep is a foreground grandchild, as a check's `npm test` -> node is (sh's background
      // jobs ignore SIGINT).
      const pidFile = join(dir, `orphan-${name}.pid`);
      const script = join(dir, `follow-${name}.ts`);
      const core = join(import.meta.dirname, "..", "..", "src", "process", "spawn.ts");
      writeFileSync(
        script,
        `import { spawnProcess } from ${JSON.stringify(core)};\n` +
          `await spawnProcess("sh", ["-c", ${JSON.stringify(`sh -c 'echo $$ > "$0"; exec sleep 300' '${pidFile}'; :`)}], { stdin: "ignore", timeoutMs: 60_000, ownProcessGroup: true });\n`,
      );
      const parent = spawn(process.execPath, [script], { stdio: "ignore" });
      const ended = new Promise<NodeJS.Signals | null>((resolve) =>
        parent.on("exit", (_code, signal) => resolve(signal)),
      );
      let grandchild = 0;
      try {
        await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", {
          timeoutMs: 20_000,
          description: "the group's sleep to start",
        });
        grandchild = Number(readFileSync(pidFile, "utf8").trim());
        parent.kill(name);
        expect(await ended).toBe(name);
        await waitFor(() => !isProcessAlive(grandchild), {
          timeoutMs: 10_000,
          description: "the group's sleep to end",
        });
      } finally {
        parent.kill("SIGKILL");
        if (grandchild > 0 && isProcessAlive(grandchild)) process.kill(grandchild, "SIGKILL");
      }
    },
  );
});
