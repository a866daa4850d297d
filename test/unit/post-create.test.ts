/**
 * The postCreate runner with a real /bin/sh and bash: commands run in order in the worktree with the
 * handoff's variables, the status file records how they ended (atomically, once). That the launcher
 * starts "Pi" only when every command succeeded is in launcher-file.test.ts.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { postCreateFiles, postCreatePrelude, readPostCreateStatus, writeRunner } from "../../src/child/post-create.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";

describe("postCreate runner", () => {
  let dir: string;
  let worktree: string;
  let manifests: string;

  beforeEach(() => {
    dir = makeTempDir("phw-hooks-");
    // Paths a shell would mangle if anything were unquoted.
    worktree = join(dir, "work tree 'q' $(x)");
    manifests = join(dir, "man ifests");
    mkdirSync(worktree, { recursive: true });
    mkdirSync(manifests, { recursive: true });
  });
  afterEach(() => removeTempDir(dir));

  async function runner(): Promise<ReturnType<typeof postCreateFiles>> {
    const files = postCreateFiles(join(manifests, "h-1.json"));
    await writeRunner(files, {
      handoffId: "h-1",
      mainCheckout: "/main checkout",
      worktreePath: worktree,
      branch: "feat/it's",
    });
    return files;
  }

  it("names its files beside the manifest", () => {
    expect(postCreateFiles("/a/m/id-1.json")).toEqual({
      runnerFile: "/a/m/id-1.post-create.sh",
      statusFile: "/a/m/id-1.post-create.status",
    });
  });

  it("runs every command in order with the handoff's variables and records success", async () => {
    const files = await runner();
    const out = execFileSync(
      "/bin/sh",
      postCreatePrelude(files, [
        'printf "%s|%s|%s|%s" "$PI_HANDOFF_ID" "$PI_HANDOFF_BRANCH" "$PI_HANDOFF_MAIN_CHECKOUT" "$PWD" > vars.txt',
        "echo second >> order.txt",
      ]).slice(1),
      {
        cwd: worktree,
        encoding: "utf8",
        timeout: 10_000,
      },
    );
    expect(readFileSync(join(worktree, "vars.txt"), "utf8")).toBe(`h-1|feat/it's|/main checkout|${worktree}`);
    expect(readFileSync(join(worktree, "order.txt"), "utf8")).toBe("second\n");
    expect(out).toContain("[postCreate 1/2] printf");
    expect(out).toContain("[postCreate 2/2] echo second >> order.txt");
    expect(await readPostCreateStatus(files.statusFile)).toEqual({ exitStatus: 0, command: 2 });
    // Only the runner and the status file: the temp file was renamed into place.
    expect(readdirSync(manifests).sort()).toEqual(["h-1.post-create.sh", "h-1.post-create.status"]);
  });

  it("stops at the first failing command and records its exit status and number", async () => {
    const files = await runner();
    const run = spawnSync("/bin/sh", postCreatePrelude(files, ["true", "exit 3", "touch never"]).slice(1), {
      cwd: worktree,
      encoding: "utf8",
      timeout: 10_000,
    });
    expect(run.status).toBe(3);
    expect(run.stdout).toContain("[postCreate 2/3] failed with exit status 3; Pi was not started.");
    expect(existsSync(join(worktree, "never"))).toBe(false);
    expect(await readPostCreateStatus(files.statusFile)).toEqual({ exitStatus: 3, command: 2 });
  });

  it("records an interrupt as a failure", async () => {
    const files = await runner();
    const run = spawnSync("/bin/sh", postCreatePrelude(files, ["kill -INT $PPID; sleep 0.2"]).slice(1), {
      cwd: worktree,
      encoding: "utf8",
      timeout: 10_000,
    });
    expect(run.status).toBe(130);
    expect(await readPostCreateStatus(files.statusFile)).toEqual({ exitStatus: 130, command: 1 });
  });

  it("reads no status before the runner wrote one, nor a malformed one", async () => {
    expect(await readPostCreateStatus(join(dir, "missing"))).toBeUndefined();
  });
});
