/**
 * Concurrency: handoffs as separate processes (fixtures/handoff-driver.ts: the real transaction,
 * real git, the real store, one private tmux server, the stand-in child), released at the same
 * moment by a barrier file.
 * - 20 handoffs from 20 processes on one repository and one manifest store all finish, each with a
 *   consistent manifest, worktree, branch, window and child, and nothing else is left;
 * - two processes racing for one branch: exactly one proceeds, the other is refused in one sentence;
 * - a lock left by a process killed while holding it (the store's, and a manifest's) is taken over
 *   once stale: a handoff and a removal go through, `pi-handoff list` never waits.
 */
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";
import { isProcessAlive } from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";
import {
  createWorld,
  listInventory,
  newArtifacts,
  runCli,
  runDriver,
  runProcess,
  unaccounted,
  type DriverRun,
  type World,
} from "../support/reliability.ts";

const DIE_HOLDING_LOCK = join(PROJECT_ROOT, "test", "support", "fixtures", "die-holding-lock.ts");
const COUNT = 20;

async function manifestOf(world: World, id: string): Promise<Manifest> {
  const read = await world.store.read(id);
  if (!read.ok) throw new Error(read.message);
  return read.manifest;
}

function stats(values: readonly number[]): { min: number; median: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0] ?? 0, median: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 };
}

describe("concurrent handoffs on one repository and one manifest store", () => {
  let world: World;
  let barrierCount = 0;

  beforeAll(async () => {
    world = await createWorld({ prefix: "phw-concurrency-" });
  });
  afterAll(async () => {
    await world?.cleanup();
  });

  /** Starts one driver per branch, all waiting on one barrier, then releases them together. */
  async function together(branches: readonly string[]): Promise<{ runs: DriverRun[]; wallMs: number }> {
    const barrier = join(world.dir, `go-${barrierCount++}`);
    const pending = branches.map((branch) =>
      runDriver(world.driverConfig(branch, { barrier, confirmMs: 60_000, focus: false }), world.env, 120_000),
    );
    const ready = () => readdirSync(world.dir).filter((name) => name.startsWith(`${basename(barrier)}.ready-`)).length;
    await waitFor(() => ready() === branches.length, {
      timeoutMs: 60_000,
      description: "every driver to wait at the barrier",
    });
    const released = Date.now();
    writeFileSync(barrier, "");
    const runs = await Promise.all(pending);
    return { runs, wallMs: Date.now() - released };
  }

  it(`${COUNT} handoffs from ${COUNT} processes all finish with consistent manifests`, async () => {
    const before = await world.artifacts();
    const branches = Array.from({ length: COUNT }, (_, index) => `many/h${String(index).padStart(2, "0")}`);
    const { runs, wallMs } = await together(branches);

    const failures = runs
      .filter((run) => run.result?.code !== "running")
      .map((run) => run.result?.message ?? `${run.status} ${run.stderr}`);
    expect(failures).toEqual([]);
    const ids = runs.map((run) => run.result?.id ?? "");
    const manifests = await Promise.all(ids.map((id) => manifestOf(world, id)));
    expect(manifests.map((m) => m.branch).sort()).toEqual(branches);
    for (const manifest of manifests) {
      expect(manifest.state).toBe("running");
      expect(manifest.history.map((entry) => entry.state)).toEqual([
        "provisioning",
        "provisioned",
        "forked",
        "launching",
        "running",
      ]);
      expect(manifest.child.confirmedBy).toBe("ack");
      expect(isProcessAlive(manifest.child.pid ?? 0)).toBe(true);
      expect(world.repo.run(["symbolic-ref", "--short", "HEAD"], { cwd: manifest.worktree.path })).toBe(
        manifest.branch,
      );
      expect(world.repo.run(["rev-parse", "HEAD"], { cwd: manifest.worktree.path })).toBe(manifest.base.sha);
    }
    // Every resource belongs to exactly one handoff.
    const distinct = (values: Array<string | undefined>) => new Set(values).size;
    expect(distinct(manifests.map((m) => m.worktree.path))).toBe(COUNT);
    expect(distinct(manifests.map((m) => (m.mux.kind === "tmux" ? m.mux.paneId : undefined)))).toBe(COUNT);
    expect(distinct(manifests.map((m) => m.child.sessionFile))).toBe(COUNT);
    expect(distinct(manifests.map((m) => String(m.child.pid)))).toBe(COUNT);

    // Each child lets go of its manifest's lock just after acknowledging, which its parent may see first.
    await waitFor(() => readdirSync(world.store.dir).filter((name) => name.endsWith(".lock")).length === 0, {
      timeoutMs: 5_000,
      description: "the children's locks on their manifests to be released",
    });
    const after = await world.artifacts();
    expect(after.manifests).toEqual([...before.manifests, ...ids].sort());
    expect(after.gitWorktrees).toHaveLength(before.gitWorktrees.length + COUNT);
    expect(after.branches).toEqual([...before.branches, ...branches].sort());
    expect(after.storeLeftovers).toEqual([]);
    expect(world.repo.run(["worktree", "list", "--porcelain"])).not.toContain("prunable");

    const inventory = await listInventory(world.env);
    expect(inventory.handoffs.filter((handoff) => handoff.status.code === "child_running")).toHaveLength(COUNT);
    expect(unaccounted(newArtifacts(before, after), inventory.handoffs)).toEqual([]);

    const elapsed = stats(runs.map((run) => run.result?.elapsedMs ?? 0));
    console.info(
      `${COUNT} concurrent handoffs: wall ${wallMs} ms; per handoff min ${elapsed.min} / median ${elapsed.median} / max ${elapsed.max} ms`,
    );
  });

  it("two processes racing for one branch: exactly one proceeds, the other is refused in one sentence", async () => {
    for (const branch of ["race/one", "race/two", "race/three"]) {
      const { runs } = await together([branch, branch]);
      const results = runs.map((run) => run.result);
      const winners = results.filter((result) => result?.code === "running");
      const losers = results.filter((result) => result?.code === "refused");
      expect(winners, JSON.stringify(results)).toHaveLength(1);
      expect(losers).toHaveLength(1);
      const winner = winners[0]?.id ?? "";
      // Whichever check the loser reached first: the claim under the store lock, or git's branch.
      expect([
        `Branch ${branch} is already claimed by handoff ${winner} (provisioning); pick a new branch name.`,
        `Branch ${branch} is already claimed by handoff ${winner} (provisioned); pick a new branch name.`,
        `Branch ${branch} is already claimed by handoff ${winner} (forked); pick a new branch name.`,
        `Branch ${branch} is already claimed by handoff ${winner} (launching); pick a new branch name.`,
        `Branch ${branch} is already claimed by handoff ${winner} (running); pick a new branch name.`,
        `Branch ${branch} already exists; pick a new branch name.`,
        `Branch ${branch} is already checked out at ${(await manifestOf(world, winner)).worktree.path}; pick a new branch name.`,
      ]).toContain(losers[0]?.message);
      const claims = (await world.store.list()).filter((entry) => entry.ok && entry.manifest.branch === branch);
      expect(claims.map((entry) => entry.id)).toEqual([winner]);
    }
  });

  it("a lock left by a killed process is taken over once stale, never a permanent block", async () => {
    const ids = (await world.store.list()).flatMap((entry) =>
      entry.ok && entry.manifest.branch === "many/h00" ? [entry.id] : [],
    );
    const victim = await manifestOf(world, ids[0] ?? "");
    // Its child stops first, so recovery may remove the handoff.
    process.kill(victim.child.pid ?? 0, "SIGTERM");

    const holders = await Promise.all([
      runProcess(NODE_BIN, [DIE_HOLDING_LOCK, world.agentDir, "store"], { env: world.env, timeoutMs: 30_000 }),
      runProcess(NODE_BIN, [DIE_HOLDING_LOCK, world.agentDir, "manifest", victim.id], {
        env: world.env,
        timeoutMs: 30_000,
      }),
    ]);
    expect(holders.map((run) => run.signal)).toEqual(["SIGKILL", "SIGKILL"]);
    const storeEntries = readdirSync(world.store.dir);
    expect(storeEntries).toContain(".store.lock");
    expect(storeEntries).toContain(`${victim.id}.json.lock`);

    const started = Date.now();
    // Readers never lock: the inventory answers while both locks are still there (not yet stale).
    const listed = await listInventory(world.env);
    expect(listed.handoffs.map((handoff) => handoff.id)).toContain(victim.id);
    expect(readdirSync(world.store.dir)).toEqual(expect.arrayContaining([".store.lock", `${victim.id}.json.lock`]));
    // A new handoff needs the store lock, a removal the manifest's: both wait for them to go stale, then go through.
    const [handoff, removal] = await Promise.all([
      runDriver(world.driverConfig("after/stale-lock", { focus: false }), world.env, 60_000),
      runCli(["remove", victim.id, "--force"], world.env),
    ]);
    const waited = Date.now() - started;
    expect(handoff.result?.code, handoff.stderr).toBe("running");
    expect(removal.status, removal.stderr).toBe(0);
    expect((await manifestOf(world, victim.id)).state).toBe("removed");
    expect(existsSync(victim.worktree.path)).toBe(false);
    // proper-lockfile's stale window is 10 s; the store waits up to 15 s.
    expect(waited).toBeGreaterThan(1_000);
    expect(waited).toBeLessThan(30_000);
    // The two stale locks are gone for good...
    const locksNow = readdirSync(world.store.dir).filter((name) => name.endsWith(".lock"));
    expect(locksNow).not.toContain(".store.lock");
    expect(locksNow).not.toContain(`${victim.id}.json.lock`);
    // ...and any other is a live writer's, released within moments: the new child acknowledges
    // under its manifest's lock, and the parent reads that acknowledgement (readers never lock)
    // before the child has removed its lock directory.
    await waitFor(() => readdirSync(world.store.dir).filter((name) => name.endsWith(".lock")).length === 0, {
      timeoutMs: 5_000,
      description: `the store's locks to be released (left: ${locksNow.join(", ") || "none"})`,
    });
    console.info(`stale locks (store and manifest) taken over after ${waited} ms`);
  });
});
