/**
 * An inventory asks a tmux server about its handoffs' panes once, whatever their number: one
 * `list-panes -a` (counted through a logging `tmux` first on PATH), each pane judged from it as
 * `display-message` judged it alone (open; killed; the same id on another server; an unknown id).
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createRecoveryDeps } from "../../src/cli/deps.ts";
import { buildInventory } from "../../src/inventory/inventory.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { storeRunningHandoff } from "../support/running-handoff.ts";
import { startPrivateTmux, type PrivateTmux } from "../support/tmux.ts";

let repo: TempRepo;
let server: PrivateTmux;
let savedPath: string | undefined;
beforeEach(async () => {
  repo = createTempRepo({ prefix: "recovery-tmux-panes-" });
  server = await startPrivateTmux();
  savedPath = process.env.PATH;
});
afterEach(async () => {
  process.env.PATH = savedPath;
  await server.kill();
  repo.cleanup();
});

it("lists the server's panes once for all its handoffs and judges each pane as asking it alone would", async () => {
  const realTmux = execFileSync("sh", ["-c", "command -v tmux"], { encoding: "utf8" }).trim();
  const shimDir = join(repo.dir, "shim");
  const log = join(repo.dir, "tmux-calls.log");
  mkdirSync(shimDir);
  writeFileSync(log, "");
  writeFileSync(join(shimDir, "tmux"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${realTmux}' "$@"\n`);
  chmodSync(join(shimDir, "tmux"), 0o755);

  const newPane = async () =>
    (await server.tmux(["new-window", "-d", "-P", "-F", "#{window_id} #{pane_id}", "sleep 300"])).trim().split(" ");
  const identity = (await server.tmux(["display-message", "-p", "#{pid}:#{start_time}"])).trim();
  const [windowA = "", paneA = ""] = await newPane();
  const [windowB = "", paneB = ""] = await newPane();
  const [windowC = "", paneC = ""] = await newPane();
  await server.tmux(["kill-window", "-t", windowC]);
  const panes: Record<string, { windowId: string; paneId: string; server: string }> = {
    open: { windowId: windowA, paneId: paneA, server: identity },
    "open-too": { windowId: windowB, paneId: paneB, server: identity },
    killed: { windowId: windowC, paneId: paneC, server: identity },
    "other-server": { windowId: windowA, paneId: paneA, server: "1:1" },
    unknown: { windowId: "@999", paneId: "%999", server: identity },
  };

  const agentDir = join(repo.dir, "agent");
  const store = ManifestStore.forAgentDir(agentDir);
  for (const [branch, pane] of Object.entries(panes)) {
    await storeRunningHandoff(store, {
      branch,
      at: new Date(Date.now() - 3_600_000).toISOString(),
      parent: { sessionFile: join(repo.dir, "parent.jsonl"), sessionId: "parent" },
      child: { sessionFile: join(repo.dir, `${branch}.jsonl`), pid: 4_000_000 },
      worktreeRoot: join(repo.dir, "worktrees"),
      mux: { kind: "tmux", socketPath: server.socketPath, sessionId: server.sessionId, ...pane },
      repo: { root: repo.root, base: { ref: "main", sha: repo.run(["rev-parse", "HEAD"]) } },
    });
  }

  process.env.PATH = `${shimDir}:${savedPath ?? ""}`;
  const env = {
    ...repo.env,
    PATH: process.env.PATH,
    PI_CODING_AGENT_DIR: agentDir,
    TMUX: "",
    TMUX_PANE: "",
    HERDR_ENV: "",
  };
  const inventory = await buildInventory(createRecoveryDeps(env));
  const workspaces = Object.fromEntries(inventory.handoffs.map((handoff) => [handoff.branch, handoff.workspace.code]));
  expect(workspaces).toEqual({
    open: "open",
    "open-too": "open",
    killed: "closed",
    "other-server": "closed",
    unknown: "closed",
  });
  const calls = readFileSync(log, "utf8").trim().split("\n");
  expect(calls).toEqual([`-S ${server.socketPath} list-panes -a -F #{pane_id} #{pid}:#{start_time}`]);
});
