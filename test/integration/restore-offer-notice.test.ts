/**
 * The offer after a reboot, as the adapter makes it in a Pi with a UI: shown once when nothing
 * happened since start-up, and never in place of a command's outcome. Pi's next info notice
 * replaces the last one (its `showStatus`), so an offer that came after `/handoff-worktree`'s
 * notice erased it (seen in CI: the parent showed the offer, not "Handed off to branch ...").
 * Real git, a real manifest store and the real inventory; the Pi host is a stand-in that records.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { registerRestoreOffer, type RestoreOfferLook } from "../../pi-extension/restore-offer.ts";
import { noteCommandStarted, report } from "../../pi-extension/report.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createRecoveryDeps } from "../../src/cli/deps.ts";
import { offersDir, restoreOffer } from "../../src/relaunch/restore-offer.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { storeRunningHandoff } from "../support/running-handoff.ts";

type Handler = (event: { reason: string }, ctx: ExtensionContext) => unknown;

/** A Pi host that records its notices and lets the test fire its events. */
function standInPi(sessionFile: string, cwd: string, beforeSessionFile?: () => void) {
  const handlers = new Map<string, Handler[]>();
  const notices: string[] = [];
  const pi = {
    on: (name: string, handler: Handler) => handlers.set(name, [...(handlers.get(name) ?? []), handler]),
  } as unknown as ExtensionAPI;
  const ctx = {
    hasUI: true,
    cwd,
    ui: { notify: (message: string) => notices.push(message) },
    sessionManager: {
      getSessionFile: () => {
        beforeSessionFile?.();
        return sessionFile;
      },
      getSessionId: () => "parent-session",
    },
  } as unknown as ExtensionContext;
  const fire = (name: string, reason = "startup") => {
    for (const handler of handlers.get(name) ?? []) handler({ reason }, ctx);
  };
  return { pi, ctx, notices, fire };
}

describe("the restore offer in a Pi with a UI", () => {
  let repo: TempRepo;
  let agentDir: string;
  let parentFile: string;
  const savedEnv = { ...process.env };

  beforeEach(async () => {
    repo = createTempRepo({ prefix: "phw-offer-" });
    agentDir = join(repo.dir, "agent");
    mkdirSync(agentDir);
    Object.assign(process.env, repo.env, { PI_CODING_AGENT_DIR: agentDir });
    parentFile = join(repo.dir, "parent.jsonl");
    writeFileSync(parentFile, "");
    // One handoff whose Pi is gone (a pid that ended), its worktree and session intact.
    const worktreeRoot = join(repo.dir, "wt");
    repo.run(["worktree", "add", "--quiet", "-b", "feat/gone", join(worktreeRoot, "feat/gone")]);
    const childFile = join(repo.dir, "child.jsonl");
    writeFileSync(childFile, `${JSON.stringify({ type: "session", version: 3, id: "c", timestamp: "t", cwd: "/" })}\n`);
    const ended = spawnSync("true");
    const store = ManifestStore.forAgentDir(agentDir);
    const stored = await storeRunningHandoff(store, {
      branch: "feat/gone",
      at: new Date().toISOString(),
      parent: { sessionFile: parentFile, sessionId: "parent-session" },
      child: { sessionFile: childFile, pid: ended.pid ?? 1 },
      worktreeRoot,
      // Its window was on a tmux server that is gone (a reboot).
      mux: {
        kind: "tmux",
        socketPath: join(repo.dir, "tmux-gone"),
        sessionId: "$0",
        windowId: "@1",
        paneId: "%1",
        server: "4242:1",
      },
      repo: { root: repo.root, base: { ref: "main", sha: repo.run(["rev-parse", "HEAD"]) } },
    });
    // What a relaunch starts its Pi with, as a fork records it.
    await store.update(stored.id, (m) => {
      m.child.model = { provider: "faux", id: "faux-1" };
    });
  });

  afterEach(() => {
    for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
    Object.assign(process.env, savedEnv);
    repo.cleanup();
  });

  const claims = () => (existsSync(offersDir(agentDir)) ? readdirSync(offersDir(agentDir)) : []);

  async function startAndLook(host: ReturnType<typeof standInPi>, meanwhile?: () => void): Promise<RestoreOfferLook> {
    const looked = new Promise<RestoreOfferLook>((resolve) => {
      registerRestoreOffer(host.pi, { delayMs: 0, onLooked: resolve });
    });
    host.fire("session_start");
    meanwhile?.();
    return looked;
  }

  it("offers the handoff once, in one notice, when nothing happened since start-up", async () => {
    const host = standInPi(parentFile, repo.root);
    expect(await startAndLook(host)).toBe("offered");
    expect(host.notices).toEqual([
      "handoff-worktree: 1 handoff has no Pi running, with its worktree and session intact (feat/gone). To bring it back, run: /handoffs relaunch --all",
    ]);
    expect(claims()).toHaveLength(1);
  });

  it("stays silent and unclaimed when a command of ours started before it looked", async () => {
    const host = standInPi(parentFile, repo.root);
    expect(await startAndLook(host, noteCommandStarted)).toBe("not_wanted");
    expect(host.notices).toEqual([]);
    expect(claims()).toEqual([]);
    // The next Pi to start, with nothing happening, still makes the offer.
    const next = standInPi(parentFile, repo.root);
    expect(await startAndLook(next)).toBe("offered");
    expect(next.notices).toHaveLength(1);
  });

  it("stays silent and unclaimed when a notice of ours was shown while it looked", async () => {
    let told = false;
    const host = standInPi(parentFile, repo.root, () => {
      // The command's outcome arrives while the offer reads the inventory.
      if (!told) report(host.ctx, "Handed off to branch feat/next", "info");
      told = true;
    });
    expect(await startAndLook(host)).toBe("not_wanted");
    expect(host.notices).toEqual(["Handed off to branch feat/next"]);
    expect(claims()).toEqual([]);
  });

  it("is asked once more right before the claim: not wanted then, nothing is claimed", async () => {
    const deps = createRecoveryDeps({ ...process.env });
    let asked = 0;
    const pi = {
      repoCommonDir: join(repo.root, ".git"),
      session: { sessionId: "parent-session", sessionFile: parentFile },
    };
    expect(
      await restoreOffer(deps, pi, "/handoffs", {
        stillWanted: () => {
          asked += 1;
          return false;
        },
      }),
    ).toEqual({ code: "none", why: "not_wanted" });
    expect(asked).toBe(1);
    expect(claims()).toEqual([]);
    // Wanted, the same look claims the set once.
    expect(await restoreOffer(deps, pi, "/handoffs", { stillWanted: () => true })).toMatchObject({ code: "offer" });
    expect(claims()).toHaveLength(1);
  });
});
