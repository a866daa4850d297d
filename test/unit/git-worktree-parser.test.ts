import { describe, expect, it } from "vitest";
import { parseWorktreeList } from "../../src/git/parse.ts";

const MAIN_SHA = "d61395352c52e67075707e43e09cc6f51a941a2e";
const OTHER_SHA = "0123456789abcdef0123456789abcdef01234567";

/** Output of `git worktree list --porcelain` (git 2.39) for a main checkout and three linked worktrees. */
const NON_BARE = [
  "worktree /repos/app",
  `HEAD ${MAIN_SHA}`,
  "branch refs/heads/main",
  "",
  "worktree /repos/app-feature",
  `HEAD ${OTHER_SHA}`,
  "branch refs/heads/feature/login",
  "",
  "worktree /repos/app-detached",
  `HEAD ${MAIN_SHA}`,
  "detached",
  "",
  "worktree /repos/app-gone",
  `HEAD ${MAIN_SHA}`,
  "branch refs/heads/gone",
  "prunable gitdir file points to non-existent location",
  "",
  "",
].join("\n");

/** A bare repository with a locked, detached worktree. */
const BARE = [
  "worktree /repos/app.git",
  "bare",
  "",
  "worktree /repos/app-wt",
  `HEAD ${OTHER_SHA}`,
  "detached",
  "locked on a removable disk",
  "",
  "",
].join("\n");

const entry = (fields: Partial<ReturnType<typeof parseWorktreeList>[number]> & { path: string }) => ({
  detached: false,
  prunable: false,
  bare: false,
  locked: false,
  ...fields,
});

describe("parseWorktreeList", () => {
  it("parses main, linked, detached and prunable worktrees", () => {
    expect(parseWorktreeList(NON_BARE)).toEqual([
      entry({ path: "/repos/app", head: MAIN_SHA, branch: "main" }),
      entry({ path: "/repos/app-feature", head: OTHER_SHA, branch: "feature/login" }),
      entry({ path: "/repos/app-detached", head: MAIN_SHA, detached: true }),
      entry({ path: "/repos/app-gone", head: MAIN_SHA, branch: "gone", prunable: true }),
    ]);
  });

  it("parses a bare main entry (no HEAD, no branch) and a locked worktree", () => {
    expect(parseWorktreeList(BARE)).toEqual([
      entry({ path: "/repos/app.git", bare: true }),
      entry({ path: "/repos/app-wt", head: OTHER_SHA, detached: true, locked: true }),
    ]);
  });

  it("parses the -z form identically, including a path containing a newline", () => {
    const nulSeparated = NON_BARE.replaceAll("\n", "\0");
    expect(parseWorktreeList(nulSeparated)).toEqual(parseWorktreeList(NON_BARE));

    const oddPath = ["worktree /repos/odd\nname", `HEAD ${MAIN_SHA}`, "branch refs/heads/odd", "", ""].join("\0");
    expect(parseWorktreeList(oddPath)).toEqual([entry({ path: "/repos/odd\nname", head: MAIN_SHA, branch: "odd" })]);
  });

  it("keeps paths with spaces whole and ignores unknown keys", () => {
    const text = [
      "worktree /repos/my app",
      `HEAD ${MAIN_SHA}`,
      "branch refs/heads/main",
      "future-key some value",
      "",
    ].join("\n");
    expect(parseWorktreeList(text)).toEqual([entry({ path: "/repos/my app", head: MAIN_SHA, branch: "main" })]);
  });

  it("returns nothing for empty output", () => {
    expect(parseWorktreeList("")).toEqual([]);
  });
});
