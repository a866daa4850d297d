/**
 * CheckoutBackup on a real checkout: taking a backup changes nothing git can see (no stat data of
 * any backed-up file moves, so git's plumbing still finds the work tree up to date), and a restore
 * puts back exactly what a stopped command changed.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CheckoutBackup } from "../../src/git/checkout-backup.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";

let repo: TempRepo | undefined;

afterEach(() => {
  repo?.cleanup();
  repo = undefined;
});

const statOf = (file: string) => {
  const stat = lstatSync(file);
  return { ino: stat.ino, nlink: stat.nlink, ctimeMs: stat.ctimeMs, mtimeMs: stat.mtimeMs, mode: stat.mode };
};

describe("CheckoutBackup", () => {
  it("takes a backup that leaves every file's stat data as it was, so git's plumbing still trusts the index", async () => {
    const r = (repo = createTempRepo({ prefix: "phw-backup-" }));
    r.commitFile("a.txt", "a\n", "add a");
    r.commitFile("b.txt", "b\n", "add b");
    const other = r.commitFile("a.txt", "changed\n", "change a");
    r.run(["reset", "--quiet", "--hard", "HEAD~1"]);
    const past = new Date(Date.now() - 3_600_000);
    for (const file of ["a.txt", "b.txt"]) utimesSync(join(r.root, file), past, past);
    r.run(["update-index", "-q", "--refresh"]);
    const before = { a: statOf(join(r.root, "a.txt")), b: statOf(join(r.root, "b.txt")) };
    const gitDir = r.run(["rev-parse", "--absolute-git-dir"]);
    const backup = await CheckoutBackup.take(r.root, gitDir, "test", ["a.txt", "b.txt", "new/c.txt"]);
    expect({ a: statOf(join(r.root, "a.txt")), b: statOf(join(r.root, "b.txt")) }).toEqual(before);
    // Plumbing that compares stat data alone (no refresh first) finds nothing changed, and moves.
    expect(r.run(["diff-files", "--name-only"])).toBe("");
    r.run(["read-tree", "-m", "-u", "HEAD", other]);
    expect(readFileSync(join(r.root, "a.txt"), "utf8")).toBe("changed\n");
    // As if that command had been stopped half-way: b.txt gone, new/c.txt made.
    unlinkSync(join(r.root, "b.txt"));
    mkdirSync(join(r.root, "new"));
    writeFileSync(join(r.root, "new", "c.txt"), "c\n");
    const restored = await backup.restore();
    await backup.discard();
    expect(restored).toEqual({ restored: ["a.txt", "b.txt", "new/c.txt"], failed: [] });
    expect(readFileSync(join(r.root, "a.txt"), "utf8")).toBe("a\n");
    expect(readFileSync(join(r.root, "b.txt"), "utf8")).toBe("b\n");
    expect(existsSync(join(r.root, "new"))).toBe(false);
    expect(existsSync(join(gitDir, "pi-handoff-backup-test"))).toBe(false);
  });

  it("keeps a file someone edited in place while the command ran, naming it, instead of putting the backup over it", async () => {
    const r = (repo = createTempRepo({ prefix: "phw-backup-" }));
    r.commitFile("a.txt", "a\n", "add a");
    const gitDir = r.run(["rev-parse", "--absolute-git-dir"]);
    const backup = await CheckoutBackup.take(r.root, gitDir, "edit", ["a.txt"]);
    // An editor saving in place: the same inode, new bytes.
    writeFileSync(join(r.root, "a.txt"), "the person's edit\n", { flag: "r+" });
    const restored = await backup.restore();
    await backup.discard();
    expect(restored).toEqual({
      restored: [],
      failed: [{ path: "a.txt", reason: "it was changed in place while the command ran, so it is kept as it is" }],
    });
    expect(readFileSync(join(r.root, "a.txt"), "utf8")).toBe("the person's edit\n");
  });
});
