/**
 * The inventory reads every handoff's own facts while the batch of `git status` runs: with the
 * batch held back, each handoff's lease is read before git answers (real repository, real store).
 * Before, 16 handoffs at a time waited on the batch, and the others' reads began only after it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { GitCli } from "../../src/git/git.ts";
import type { WorktreeStatus } from "../../src/git/types.ts";
import { readSessionLease, type SessionLease } from "../../src/child/lease.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createRecoveryDeps } from "../../src/cli/deps.ts";
import { buildInventory } from "../../src/inventory/inventory.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import { storeRunningHandoff } from "../support/running-handoff.ts";

/** More than the inventory examines at once (16), so a wait behind the batch would show. */
const HANDOFFS = 24;

let repo: TempRepo;
beforeEach(() => {
  repo = createTempRepo({ prefix: "inventory-overlap-" });
});
afterEach(() => repo.cleanup());

it("reads every handoff's lease before the batch of uncommitted changes answers, then reports each one's changes", async () => {
  const agentDir = join(repo.dir, "agent");
  const env = { ...repo.env, PI_CODING_AGENT_DIR: agentDir, TMUX: "", TMUX_PANE: "", HERDR_ENV: "" };
  const store = ManifestStore.forAgentDir(agentDir);
  const sha = repo.run(["rev-parse", "HEAD"]);
  const worktreeRoot = join(repo.dir, "worktrees");
  for (let i = 0; i < HANDOFFS; i++) {
    const branch = `overlap/${i}`;
    repo.run(["worktree", "add", "-q", "-b", branch, join(worktreeRoot, branch), sha]);
    await storeRunningHandoff(store, {
      branch,
      at: new Date(Date.now() - 3_600_000).toISOString(),
      parent: { sessionFile: join(repo.dir, "parent.jsonl"), sessionId: "parent" },
      child: { sessionFile: join(repo.dir, `child-${i}.jsonl`), pid: 4_000_000 },
      worktreeRoot,
      mux: {
        kind: "tmux",
        socketPath: join(repo.dir, "no-tmux.sock"),
        sessionId: "$1",
        windowId: `@${i}`,
        paneId: `%${i}`,
      },
      repo: { root: repo.root, base: { ref: "main", sha } },
    });
  }
  // Every other worktree has one untracked file, so each report's changes are seen to be its own.
  for (let i = 0; i < HANDOFFS; i += 2) writeFileSync(join(worktreeRoot, `overlap/${i}`, "new.txt"), "x\n");

  const git = new GitCli({ env });
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let readsWhenGitAnswered: number | undefined;
  const leaseReads: string[] = [];
  // The batch answers only once every lease was read (or, should that never happen, after 10 s).
  const fallback = setTimeout(release, 10_000);
  git.worktreeStatuses = async (checkouts: readonly string[]): Promise<(WorktreeStatus | undefined)[]> => {
    await gate;
    readsWhenGitAnswered = leaseReads.length;
    return GitCli.prototype.worktreeStatuses.call(git, checkouts);
  };
  const readLease = async (file: string): Promise<SessionLease> => {
    leaseReads.push(file);
    if (leaseReads.length === HANDOFFS) release();
    return readSessionLease(agentDir, file);
  };
  try {
    const inventory = await buildInventory({ ...createRecoveryDeps(env), git, readLease });
    expect(readsWhenGitAnswered).toBe(HANDOFFS);
    expect(inventory.handoffs).toHaveLength(HANDOFFS);
    const untracked = Object.fromEntries(
      inventory.handoffs.map((handoff) => [handoff.branch, handoff.changes?.untrackedFiles.length]),
    );
    expect(untracked).toEqual(
      Object.fromEntries(Array.from({ length: HANDOFFS }, (_, i) => [`overlap/${i}`, i % 2 === 0 ? 1 : 0])),
    );
  } finally {
    clearTimeout(fallback);
  }
});
