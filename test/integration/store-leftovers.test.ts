/**
 * What killed processes leave in the manifest store, through the real `pi-handoff`: `prune
 * --dry-run` names every entry (deleted or kept, and why) and changes nothing; `prune` deletes
 * only the abandoned ones (a dead writer's temp file, a dead holder's action lock), never a live
 * writer's temp file or a file the store does not write; `remove` deletes its handoff's dead
 * writers' temp files and its launch files, and keeps its manifest. The temp files are the ones `writeFileAtomic` leaves when its process is
 * SIGKILLed between the hard link and the removal (same name pattern, real dead and live pids).
 */
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deadPid, killAndWait, runningManifest } from "../support/recovery-rig.ts";
import { createWorld, runCli, type World } from "../support/reliability.ts";

describe("the store's leftovers", () => {
  let world: World;

  beforeAll(async () => {
    world = await createWorld({ prefix: "phw-leftovers-" });
  });
  afterAll(async () => {
    await world?.cleanup();
  });

  it("prune names each leftover, deletes only the abandoned ones; remove takes its handoff's dead temp files", async () => {
    const manifest = runningManifest(await world.handoff({ branch: "leftovers/one" }));
    await killAndWait(manifest.child.pid ?? 0);
    const dir = world.store.dir;
    const dead = await deadPid();
    const deadOther = `.another-handoff-0000.json.${dead}.0a0b0c0d.tmp`;
    const deadOwn = `.${manifest.id}.json.${dead}.1a1b1c1d.tmp`;
    const liveOwn = `.${manifest.id}.json.${process.pid}.2a2b2c2d.tmp`;
    const deadLock = ".20260101-000000-gone-0000.action";
    for (const name of [deadOther, deadOwn, liveOwn, "notes.txt"]) writeFileSync(join(dir, name), "{");
    writeFileSync(
      join(dir, deadLock),
      `${JSON.stringify({ id: "20260101-000000-gone-0000", action: "relaunch", pid: dead, since: "2026-01-01T00:00:00.000Z" })}\n`,
    );
    const entries = () => readdirSync(dir).sort();
    const before = entries();

    const listed = await runCli(["list"], world.env);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(
      "\n5 other files in the manifest store; pi-handoff prune --dry-run says what each is.\n",
    );

    const dry = await runCli(["prune", "--dry-run"], world.env);
    expect(dry.status, dry.stderr).toBe(0);
    expect(entries()).toEqual(before);
    const lines = dry.stdout.split("\n");
    expect(lines).toContain("Would do (dry run, nothing changed):");
    expect(lines).toContain("  delete 3 leftover files in the store:");
    expect(lines).toContain(`    ${deadOther}: a temp file whose writer (pid ${dead}) is gone`);
    expect(lines).toContain(`    ${deadOwn}: a temp file whose writer (pid ${dead}) is gone`);
    expect(lines).toContain(
      `    ${deadLock}: the action lock of handoff 20260101-000000-gone-0000: relaunch by pid ${dead} since 2026-01-01T00:00:00.000Z, which is gone`,
    );
    expect(lines).toContain(`left in the store: ${liveOwn}: a temp file being written by pid ${process.pid}`);
    expect(lines).toContain("left in the store: notes.txt: not a file this store writes; left alone");

    const pruned = await runCli(["prune"], world.env);
    expect(pruned.status, pruned.stderr).toBe(0);
    expect(pruned.stdout).toContain("Done: 1 of 1 action.");
    expect(entries()).toEqual(before.filter((name) => ![deadOther, deadOwn, deadLock].includes(name)));

    // A removal sweeps the dead writers' temp files beside its own manifest, nothing else.
    const deadAgain = `.${manifest.id}.json.${dead}.3a3b3c3d.tmp`;
    writeFileSync(join(dir, deadAgain), "{");
    const ownFiles = () => entries().filter((name) => name.startsWith(`${manifest.id}.`));
    expect(ownFiles()).toEqual(
      expect.arrayContaining([
        `${manifest.id}.json`,
        `${manifest.id}.launch.params`,
        `${manifest.id}.launch.sh`,
        `${manifest.id}.launch.started`,
      ]),
    );
    const removed = await runCli(["remove", manifest.id], world.env);
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.stdout).toContain("deleted 1 temp file a killed writer left in the store");
    expect(existsSync(join(dir, deadAgain))).toBe(false);
    expect(existsSync(join(dir, liveOwn))).toBe(true);
    expect(existsSync(join(dir, "notes.txt"))).toBe(true);
    // Its launch files go too (it is never launched again); the manifest stays as the record.
    expect(ownFiles()).toEqual([`${manifest.id}.json`]);
  });

  it("a launch file that cannot be deleted is named, with its place, and the removal still stands", async () => {
    const manifest = runningManifest(await world.handoff({ branch: "leftovers/stuck" }));
    await killAndWait(manifest.child.pid ?? 0);
    const dir = world.store.dir;
    // A non-empty directory where the launcher's params were: unlink cannot take it.
    const params = join(dir, `${manifest.id}.launch.params`);
    rmSync(params);
    mkdirSync(join(params, "in-the-way"), { recursive: true });
    // And a second one later in the list: each is tried whatever the first did, each is named.
    const started = join(dir, `${manifest.id}.launch.started`);
    rmSync(started, { force: true });
    mkdirSync(join(started, "in-the-way"), { recursive: true });
    const script = join(dir, `${manifest.id}.launch.sh`);
    expect(existsSync(script)).toBe(true);
    const removed = await runCli(["remove", manifest.id], world.env);
    expect(removed.status, removed.stderr).toBe(0);
    const stuck = (path: string) => `${path} (EISDIR: illegal operation on a directory, unlink '${path}')`;
    const line = removed.stdout.split("\n").find((text) => text.includes("could not delete")) ?? removed.stdout;
    expect(line).toContain(
      `could not delete its launch files ${stuck(params)}, ${stuck(started)}; delete them by hand`,
    );
    const after = await world.store.read(manifest.id);
    expect(after.ok && after.manifest.state).toBe("removed");
    expect(existsSync(join(params, "in-the-way"))).toBe(true);
    // The files that could go went.
    expect(existsSync(script)).toBe(false);
  });
});
