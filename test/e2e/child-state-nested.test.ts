/**
 * The handoff marker counts for the Pi it was given to only: a Pi that the child's `!` (the same
 * shell runner as its bash tool) starts inherits the child's environment, and must not pass for
 * the handoff's child and leave a state file nothing deletes (issue 41, point 13).
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childStateDir, childStatePath, readChildStateSync } from "../../src/child/child-state.ts";
import { canonicalSessionPath } from "../../src/child/lease.ts";
import { PROCESS_INFO_ENV, processFacts } from "../../src/process/facts.ts";
import { createPiSandbox, EXTENSION_ENTRY, FAUX_MODEL, NODE_BIN, PI_CLI, type PiSandbox } from "../support/pi.ts";
import { PiRpc } from "../support/pi-rpc.ts";
import { waitFor } from "../support/tmux.ts";

describe("a Pi started by a handoff's child", () => {
  let sandbox: PiSandbox;
  let child: PiRpc | undefined;

  beforeAll(() => {
    sandbox = createPiSandbox("phw-nested-");
  });

  afterAll(async () => {
    await child?.stop();
    sandbox?.cleanup();
  });

  it("publishes no state file; the child it runs under does", async () => {
    const cwd = join(sandbox.dir, "work");
    const nestedSessions = join(sandbox.dir, "nested-sessions");
    mkdirSync(cwd, { recursive: true });
    child = PiRpc.start(["--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY], {
      cwd,
      env: { ...sandbox.env, PI_HANDOFF_ID: "h-nested-1" },
    });
    const state = await child.command({ type: "get_state" });
    const childSession = (state.data as { sessionFile?: string }).sessionFile;
    if (childSession === undefined) throw new Error(`the child has no session file: ${JSON.stringify(state)}`);
    await waitFor(() => readChildStateSync(sandbox.agentDir, childSession).code === "ok", {
      timeoutMs: 30_000,
      description: "the child's state file",
    });

    const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
    const nested = [NODE_BIN, PI_CLI, "-p", "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY]
      .concat(["--session-dir", nestedSessions, "nested question"])
      .map(quote)
      .join(" ");
    const ran = await child.command({ type: "bash", command: `${nested}; echo "exit $?"` }, 60_000);
    expect(ran).toMatchObject({ success: true, data: { exitCode: 0 } });
    expect((ran.data as { output?: string }).output).toMatch(/exit 0\n?$/);

    // The nested Pi ran with this package (it kept its session), and left no state file for it.
    const nestedFiles = readdirSync(nestedSessions).filter((name) => name.endsWith(".jsonl"));
    expect(nestedFiles).toHaveLength(1);
    const nestedSession = join(nestedSessions, nestedFiles[0] ?? "");
    expect(existsSync(childStatePath(sandbox.agentDir, nestedSession))).toBe(false);
    expect(readdirSync(childStateDir(sandbox.agentDir))).toEqual([
      childStatePath(sandbox.agentDir, canonicalSessionPath(childSession)).split("/").at(-1),
    ]);
    expect(readChildStateSync(sandbox.agentDir, childSession)).toMatchObject({
      code: "ok",
      record: { pid: child.pid, state: "idle" },
    });
    // The child itself still shows its marker to the process scan (recovery's `marker` evidence),
    // read by either implementation: the exec-time environment keeps it.
    const pid = child.pid ?? 0;
    for (const facts of [processFacts({}), processFacts({ [PROCESS_INFO_ENV]: "portable" })]) {
      const described = await facts.describe([pid]);
      expect(described.processes.find((entry) => entry.pid === pid)?.handoffId).toBe("h-nested-1");
    }
  });
});
