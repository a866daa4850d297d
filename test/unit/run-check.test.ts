/**
 * The queue's check (queue/check.ts): an argument list runs without a shell, a string through
 * `sh -c`; only exit 0 passes; a timeout, a signal and a program that cannot start fail; the whole
 * output is in the log, its last 20 lines in the outcome; a timed-out check leaves nothing it
 * started running.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { describeCheckFailure, runCheck } from "../../src/queue/check.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { isProcessAlive } from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";

let dir: string;
afterEach(() => removeTempDir(dir));

const run = (check: string | string[], timeoutMs = 10_000) => {
  return runCheck(check, {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "" },
    timeoutMs,
    log: join(dir, "logs", "check.log"),
  });
};

describe("the queue's check", () => {
  it("passes on exit 0 and keeps the whole output, stdout then stderr", async () => {
    dir = makeTempDir("phw-check-");
    const outcome = await run("echo out; echo err >&2; pwd");
    expect(outcome).toEqual({ code: "passed", log: join(dir, "logs", "check.log"), tail: ["out", dir, "err"] });
    expect(readFileSync(join(dir, "logs", "check.log"), "utf8")).toBe(`out\n${dir}\nerr\n`);
  });

  it("runs an argument list as it is: no word is read by a shell", async () => {
    dir = makeTempDir("phw-check-");
    const outcome = await run(["printf", "%s\\n", "$(touch pwned)", "a;b"]);
    expect(outcome).toMatchObject({ code: "passed", tail: ["$(touch pwned)", "a;b"] });
    expect(existsSync(join(dir, "pwned"))).toBe(false);
  });

  it("fails on a non-zero exit with the last 20 lines, on a timeout, and when it cannot start", async () => {
    dir = makeTempDir("phw-check-");
    const failed = await run("for i in $(seq 1 30); do echo line $i; done; exit 4");
    expect(failed).toMatchObject({ code: "failed", why: "exit", exitCode: 4 });
    expect(failed.tail).toEqual(Array.from({ length: 20 }, (_, i) => `line ${i + 11}`));
    if (failed.code !== "failed") throw new Error("it passed");
    expect(describeCheckFailure(failed, 10_000)).toBe("the check exited with 4");
    const slow = await run(["sleep", "30"], 1_000);
    expect(slow).toMatchObject({ code: "failed", why: "timeout" });
    if (slow.code !== "failed") throw new Error("it passed");
    expect(describeCheckFailure(slow, 1_000)).toBe("the check ran past its 1 s and was stopped");
    const missing = await run(["./no-such-check"]);
    expect(missing).toMatchObject({ code: "failed", why: "not_started" });
  });

  it("stops the whole check at its timeout: what it started dies with it, one that ignores SIGTERM by SIGKILL", async () => {
    dir = makeTempDir("phw-check-");
    // As `npm test` starting node: the check's shell waits for processes of its own, one of them
    // deaf to SIGTERM (an ignored signal stays ignored across exec).
    const check = [
      "sleep 300 & echo $! > polite.pid",
      "(trap '' TERM; exec sleep 300) & echo $! > stubborn.pid",
      "wait",
    ].join("\n");
    const outcome = await run(check, 1_000);
    expect(outcome).toMatchObject({ code: "failed", why: "timeout" });
    const pids = ["polite.pid", "stubborn.pid"].map((file) => Number(readFileSync(join(dir, file), "utf8").trim()));
    expect(pids.every((pid) => Number.isInteger(pid) && pid > 0)).toBe(true);
    try {
      await waitFor(() => pids.every((pid) => !isProcessAlive(pid)), {
        timeoutMs: 10_000,
        description: "the check's processes to be gone",
      });
    } finally {
      for (const pid of pids.filter((each) => isProcessAlive(each))) process.kill(pid, "SIGKILL");
    }
  });
});
