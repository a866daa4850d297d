/**
 * The release as a user gets it: `npm pack` makes the tarball, a real npm registry (Verdaccio, on
 * a loopback port, test/support/npm-registry.ts) serves it once published, and every install route
 * the README names is run as written, each command line of its blocks in `sh`, in a scratch HOME
 * and agent dir with `npm_config_registry` pointed at that registry:
 *
 * - from the registry: `pi install npm:pi-handoff-worktree`, `pi-handoff` on PATH by the README's
 *   line, a handoff typed into Pi's TUI in tmux, the command its notice names run as printed;
 * - the command alone: `npm i -g` (into a prefix in the temp dir) and `npx -p`;
 * - from a checkout: `npm ci --omit=dev`, `pi install .`, `npm link`;
 * - then `pi update` to a newer published version (its CHANGELOG entry is what Pi shows), and the
 *   README's uninstall steps, after which nothing of the package is left in the agent dir.
 *
 * The README's first screen says what the package does and how to try it (demo, tests). The
 * tarball holds what a user runs (the import graph of the bin and the extension), the
 * documents npm and Pi show, the published schemas, and nothing else. Pi runs with the project's
 * Node 22 and the offline faux provider; the registry proxies the package's dependencies from the
 * public npm registry, the one this machine reaches.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDOFF_HELP } from "../../src/handoff/args.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { createTempRepo, makeTempDir, removeTempDir, type TempRepo } from "../support/git-repo.ts";
import { startNpmRegistry, PUBLIC_NPM_REGISTRY, type NpmRegistry } from "../support/npm-registry.ts";
import { createPiSandbox, FAUX_MODEL, PROJECT_ROOT, runPiPrint, type PiSandbox } from "../support/pi.ts";
import { isProcessAlive, killAndWait } from "../support/recovery-rig.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";
import { HANDOFF_STARTED, PI_READY, submitLine, tmuxPane, waitForScreen, type PaneDriver } from "../support/tui.ts";

const PACKAGE = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  pi: { extensions: string[] };
};
/** The update the test publishes: the same package, one patch version on, with its own changelog entry. */
const NEXT_VERSION = PACKAGE.version.replace(/\d+$/, (patch) => String(Number(patch) + 1));
const NEXT_ENTRY = "- What the release test published as the update.";
/** An extension that writes, at session_start, the roots this package's native loader serves. */
const LOADER_PROBE = `import { writeFileSync } from "node:fs";
export default function (pi: { on(event: string, handler: () => void): void }): void {
  pi.on("session_start", () => {
    const state = (globalThis as { __piHandoffWorktreeNativeLoader?: { roots: string[] } }).__piHandoffWorktreeNativeLoader;
    writeFileSync(process.env.PHW_LOADER_PROBE ?? "", JSON.stringify(state?.roots ?? null));
  });
}
`;
/** What Node prints for a warning (`(node:1234) ExperimentalWarning: ...`). */
const NODE_WARNING = /\(node:\d+\)|ExperimentalWarning|DeprecationWarning/;
/** Installs download the dependencies through the registry and start several Pis, on a loaded machine. */
const STEP_TIMEOUT_MS = 240_000;

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: readonly string[], cwd: string, env: Record<string, string>): Run {
  const result = spawnSync(command, args, {
    cwd,
    env,
    encoding: "utf8",
    timeout: 180_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** Runs README lines as a user's shell would, stopping at the first that fails. */
function sh(lines: readonly string[], cwd: string, env: Record<string, string>): Run {
  return run("sh", ["-ec", lines.join("\n")], cwd, env);
}

/** The README's section under `heading`, up to the next `## `. */
function readmeSection(heading: string): string {
  const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
  const start = readme.indexOf(`\n## ${heading}\n`);
  expect(start, heading).toBeGreaterThan(0);
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** The fenced blocks of a section (```sh, or untagged), one command per line, comments dropped. */
function codeBlocks(section: string, tag: "sh" | ""): string[][] {
  return [...section.matchAll(new RegExp(`\`\`\`${tag}\\n([\\s\\S]*?)\`\`\``, "g"))].map((block) =>
    (block[1] ?? "")
      .split("\n")
      .map((line) => line.replace(/\s#\s.*$/, "").trim())
      .filter((line) => line !== ""),
  );
}

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => !entry.isDirectory())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * The modules a user runs: the bin's and the extension's relative imports (static, dynamic, and
 * `new URL("...", import.meta.url)`), followed through the files the tarball holds.
 */
function runModules(packageDir: string): Set<string> {
  const seen = new Set<string>();
  const queue = [...Object.values(PACKAGE.bin), ...PACKAGE.pi.extensions].map((entry) => normalize(entry));
  const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)["'](\.\.?\/[^"']+)["']/g;
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const match of readFileSync(join(packageDir, file), "utf8").matchAll(specifier)) {
      const target = normalize(join(dirname(file), match[1] ?? ""));
      if (/\.(?:m?ts|m?js)$/.test(target)) queue.push(target);
    }
  }
  return seen;
}

describe("the release, installed as the README says from a real registry", () => {
  let work: string;
  let registry: NpmRegistry;
  let tarball: string;
  let dryRun: Run;
  const sandboxes: PiSandbox[] = [];
  const cleanups: (() => Promise<void> | void)[] = [];

  /** An isolated Pi (own HOME and agent dir, offline model) whose npm uses the test's registry. */
  function isolatedPi(): PiSandbox {
    // No `pi-handoff` on PATH but what the route under test puts there.
    const sandbox = createPiSandbox("phw-release-", { recoveryOnPath: false });
    sandboxes.push(sandbox);
    // A user's shell, not an npm script's: no npm settings inherited from the runner (npx's yes=false).
    for (const key of Object.keys(sandbox.env)) if (key.toLowerCase().startsWith("npm_")) delete sandbox.env[key];
    Object.assign(sandbox.env, {
      npm_config_registry: registry.url,
      npm_config_cache: join(work, "npm-cache"),
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
      npm_config_audit: "false",
    });
    return sandbox;
  }

  const install = codeBlocks(readmeSection("Install"), "sh");
  const uninstall = readmeSection("Uninstall");

  beforeAll(async () => {
    work = makeTempDir("phw-release-");
    cleanups.push(() => removeTempDir(work));
    const env = {
      ...(process.env as Record<string, string>),
      npm_config_update_notifier: "false",
      npm_config_cache: join(work, "npm-cache"),
    };
    const packed = run("npm", ["pack", "--silent", "--pack-destination", work], PROJECT_ROOT, env);
    expect(packed.status, packed.stderr).toBe(0);
    tarball = join(work, packed.stdout.trim().split("\n").at(-1) ?? "");
    expect(tarball).toBe(join(work, `${PACKAGE.name}-${PACKAGE.version}.tgz`));
    mkdirSync(join(work, "registry"));
    const upstream = process.env.npm_config_registry ?? PUBLIC_NPM_REGISTRY;
    registry = await startNpmRegistry(join(work, "registry"), { own: [PACKAGE.name], upstream });
    cleanups.unshift(() => registry.stop());
    const maintainer = { ...env, npm_config_registry: registry.url };
    dryRun = run(
      "npm",
      ["publish", "--dry-run", "--ignore-scripts", "--userconfig", registry.publisherConfig],
      PROJECT_ROOT,
      maintainer,
    );
    // Published as the maintainer would: the tarball, with the publishing user's token.
    const published = run("npm", ["publish", tarball, "--userconfig", registry.publisherConfig], work, maintainer);
    expect(published.status, published.stderr).toBe(0);
    expect(published.stdout).toBe(`+ ${PACKAGE.name}@${PACKAGE.version}\n`);
  }, STEP_TIMEOUT_MS);

  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
    for (const sandbox of sandboxes) sandbox.cleanup();
  });

  it("starts with what it does and how to try it, within a terminal's first screen", () => {
    const firstScreen = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8").split("\n").slice(0, 24).join("\n");
    expect(firstScreen).toMatch(/^# pi-handoff-worktree\n\nHand a \[Pi\]\([^)]+\) conversation off into\n/);
    expect(firstScreen).toMatch(/^npm install && npm run demo +# /m);
    expect(firstScreen).toMatch(/^npm test +# /m);
    expect(firstScreen).toContain("install it into your own Pi");
  });

  it("names four routes: from npm, from a checkout, and the command alone", () => {
    expect(install).toEqual([
      [
        `pi install npm:${PACKAGE.name}`,
        'export PATH="${PI_CODING_AGENT_DIR:-$HOME/.pi/agent}/npm/node_modules/.bin:$PATH"',
      ],
      ["npm ci --omit=dev", "pi install .", "npm link"],
      [`npm i -g ${PACKAGE.name}`, `npx -p ${PACKAGE.name} pi-handoff list`],
    ]);
  });

  it("packs what a user runs and nothing else, and npm publish has nothing to warn about", {
    timeout: STEP_TIMEOUT_MS,
  }, () => {
    const unpacked = join(work, "unpacked");
    mkdirSync(unpacked);
    expect(
      run("tar", ["xzf", tarball, "-C", unpacked, "--strip-components=1"], work, process.env as Record<string, string>)
        .status,
    ).toBe(0);
    const files = filesUnder(unpacked);
    const modules = runModules(unpacked);
    const code = files.filter((file) => /\.(?:m?ts|m?js)$/.test(file) && !file.endsWith(".d.mts"));
    // Every module the bin or the extension reaches is there, and no module nothing reaches.
    expect([...modules].filter((file) => !files.includes(file))).toEqual([]);
    expect(code.filter((file) => !modules.has(file))).toEqual([]);
    // A declaration only beside the module it types (for TypeScript users of the package).
    expect(files.filter((file) => file.endsWith(".d.mts") && !modules.has(file.replace(/\.d\.mts$/, ".mjs")))).toEqual(
      [],
    );
    const schemas = readdirSync(join(PROJECT_ROOT, "schemas")).map((name) => `schemas/${name}`);
    expect(files.filter((file) => !/\.(?:m?ts|m?js)$/.test(file))).toEqual(
      ["CHANGELOG.md", "LICENSE", "README.md", "docs/demo.png", "package.json", ...schemas].sort(),
    );

    // What `npm publish` said of the tree itself, before the version was there: nothing to warn about.
    expect(dryRun.status, dryRun.stderr).toBe(0);
    expect(dryRun.stderr).not.toMatch(/npm warn/i);
  });

  it("npm i -g and npx -p give pi-handoff alone, with no second Pi", { timeout: STEP_TIMEOUT_MS }, () => {
    const sandbox = isolatedPi();
    sandbox.env.npm_config_prefix = join(sandbox.dir, "global");
    sandbox.env.PATH = `${join(sandbox.dir, "global", "bin")}:${sandbox.env.PATH}`;
    const [global = "", once = ""] = install[2] ?? [];
    const done = sh([global, "command -v pi-handoff", "pi-handoff --version", once], sandbox.home, sandbox.env);
    expect(done.status, done.stderr).toBe(0);
    expect(done.stdout.split("\n").slice(-4)).toEqual([
      join(sandbox.dir, "global", "bin", "pi-handoff"),
      `pi-handoff ${PACKAGE.version}`,
      `No handoffs in ${sandbox.agentDir}.`,
      "",
    ]);
    const installedDir = join(sandbox.dir, "global", "lib", "node_modules", PACKAGE.name, "node_modules");
    expect(readdirSync(installedDir).filter((name) => name === "@earendil-works" || name === "typebox")).toEqual([]);
    const npx = join(work, "npm-cache", "_npx");
    const npxModules = readdirSync(npx).flatMap((dir) => readdirSync(join(npx, dir, "node_modules")));
    expect(npxModules).toContain(PACKAGE.name);
    expect(npxModules.filter((name) => name === "@earendil-works" || name === "typebox")).toEqual([]);
  });

  it("from a checkout: pi install alone cannot load it; the README's three lines can, with pi-handoff on PATH", {
    timeout: STEP_TIMEOUT_MS,
  }, () => {
    const sandbox = isolatedPi();
    sandbox.env.npm_config_prefix = join(sandbox.dir, "global");
    sandbox.env.PATH = `${join(sandbox.dir, "global", "bin")}:${sandbox.env.PATH}`;
    // A checkout's files: what the package ships, plus the lock file npm ci installs from.
    const checkout = join(sandbox.dir, "checkout");
    mkdirSync(checkout);
    expect(run("tar", ["xzf", tarball, "-C", checkout, "--strip-components=1"], checkout, sandbox.env).status).toBe(0);
    cpSync(join(PROJECT_ROOT, "package-lock.json"), join(checkout, "package-lock.json"));
    const help = (): Run =>
      run("pi", ["-p", "--no-session", "--model", FAUX_MODEL, "/handoff-worktree --help"], sandbox.home, sandbox.env);

    // What the README warns about: Pi installs nothing in a local directory.
    expect(run("pi", ["install", "."], checkout, sandbox.env).status).toBe(0);
    const bare = help();
    expect(bare.status).toBe(1);
    expect(bare.stderr).toContain("Cannot find module 'zod'");

    const done = sh([...(install[1] ?? []), "command -v pi-handoff", "pi-handoff --version"], checkout, sandbox.env);
    expect(done.status, done.stderr).toBe(0);
    expect(done.stdout.split("\n").slice(-3)).toEqual([
      join(sandbox.dir, "global", "bin", "pi-handoff"),
      `pi-handoff ${PACKAGE.version}`,
      "",
    ]);
    // --omit=dev: no Pi of its own in the checkout either.
    expect(existsSync(join(checkout, "node_modules", "zod"))).toBe(true);
    expect(existsSync(join(checkout, "node_modules", "@earendil-works"))).toBe(false);
    expect(help()).toEqual({ status: 0, stdout: "", stderr: `${HANDOFF_HELP}\n` });

    // The README's way to take the linked command away again.
    const unlinked = sh([`npm rm -g ${PACKAGE.name}`, "! command -v pi-handoff"], checkout, sandbox.env);
    expect(unlinked.status, unlinked.stderr).toBe(0);
    expect(readFileSync(join(PROJECT_ROOT, "README.md"), "utf8")).toContain(`\`npm rm -g ${PACKAGE.name}\``);
  });

  describe("from the registry, then updated, then uninstalled", () => {
    let sandbox: PiSandbox;
    let repo: TempRepo;
    let tmux: PrivateTmux;
    let parent: PaneDriver;
    let parentPid: number;
    let manifest: Manifest;
    const installed = (): string => join(sandbox.agentDir, "npm", "node_modules", PACKAGE.name);
    const onPath = (lines: readonly string[], cwd = repo.root): Run =>
      sh([install[0]?.[1] ?? "", ...lines], cwd, sandbox.env);

    beforeAll(async () => {
      sandbox = isolatedPi();
      repo = createTempRepo({ prefix: "phw-release-repo-" });
      cleanups.unshift(() => repo.cleanup());
      tmux = await startPrivateTmux({ env: sandbox.env });
      cleanups.unshift(() => tmux.kill());
    });

    it("installs with pi install, and the README's line puts pi-handoff on PATH", { timeout: STEP_TIMEOUT_MS }, () => {
      const done = sh(
        [...(install[0] ?? []), "command -v pi-handoff", "pi-handoff --version"],
        sandbox.home,
        sandbox.env,
      );
      expect(done.status, done.stderr).toBe(0);
      expect(done.stderr).not.toMatch(NODE_WARNING);
      expect(done.stdout.split("\n").slice(-3)).toEqual([
        join(sandbox.agentDir, "npm", "node_modules", ".bin", "pi-handoff"),
        `pi-handoff ${PACKAGE.version}`,
        "",
      ]);
      expect(JSON.parse(readFileSync(join(installed(), "package.json"), "utf8"))).toMatchObject({
        name: PACKAGE.name,
        version: PACKAGE.version,
      });
      // Pi's packages are optional peers: npm left them to the Pi that loads the extension.
      const modules = readdirSync(join(sandbox.agentDir, "npm", "node_modules"));
      expect(modules.filter((name) => name === "@earendil-works" || name === "typebox")).toEqual([]);

      // The settings' `$schema` as the README gives it for the agent dir: the installed copy.
      const settingsSection = readmeSection("Settings");
      const local = /"\$schema": "(\.\/npm\/[^"]+)"/.exec(settingsSection)?.[1] ?? "";
      expect(readFileSync(join(sandbox.agentDir, local), "utf8")).toBe(
        readFileSync(join(PROJECT_ROOT, "schemas", "settings.schema.json"), "utf8"),
      );
      writeFileSync(join(sandbox.agentDir, "handoff-worktree.json"), JSON.stringify({ $schema: local }));
      // The versioned URL names the version this package is.
      expect(settingsSection).toContain(
        `"$schema": "https://unpkg.com/${PACKAGE.name}@${PACKAGE.version}/schemas/settings.schema.json"`,
      );
    });

    it("loads through Node's own loader, from the installed copy", { timeout: STEP_TIMEOUT_MS }, () => {
      const probeOut = join(sandbox.dir, "loader-roots.json");
      const probe = join(sandbox.agentDir, "extensions", "loader-probe.ts");
      writeFileSync(probe, LOADER_PROBE);
      runPiPrint(sandbox, repo.root, ["--no-session", "--model", FAUX_MODEL, "a question"], {
        PHW_LOADER_PROBE: probeOut,
      });
      rmSync(probe);
      expect(JSON.parse(readFileSync(probeOut, "utf8"))).toEqual([`${pathToFileURL(installed()).href}/`]);
    });

    it("hands off from Pi's TUI, and the command the notice names runs as printed", {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      parent = tmuxPane(tmux, tmux.firstPaneId);
      // A new session in the user's shell, with the README's PATH line: Pi records the version it met.
      await parent.type(`cd '${repo.root}' && ${install[0]?.[1]} && exec pi --model ${FAUX_MODEL}`);
      await parent.enter();
      await waitForScreen(parent, PI_READY, "the parent TUI");
      parentPid = Number((await tmux.tmux(["display-message", "-p", "-t", tmux.firstPaneId, "#{pane_pid}"])).trim());
      await submitLine(parent, "first question", /faux reply to: first question/);
      await submitLine(parent, "/handoff-worktree release/first -- say hello", HANDOFF_STARTED);
      const screen = await waitForScreen(
        parent,
        /Handed off to branch|failed|did not confirm/,
        "the handoff's notice",
        90_000,
      );
      expect(screen).toContain("Handed off to branch release/first");
      expect(screen).not.toMatch(NODE_WARNING);

      const [entry] = await ManifestStore.forAgentDir(sandbox.agentDir).list();
      if (entry === undefined || !entry.ok) throw new Error("no manifest");
      manifest = entry.manifest;
      expect(manifest.state).toBe("running");
      const child = manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "";
      await waitFor(async () => (await tmux.capturePane(child)).includes("say hello"), {
        timeoutMs: 90_000,
        description: "the child Pi to show its task",
      });
      expect(await tmux.capturePane(child)).not.toMatch(NODE_WARNING);

      // The notice names `pi-handoff inspect <id>` for a shell: in this route it runs as printed.
      const named = new RegExp(`pi-handoff inspect ${manifest.id}\\b`);
      expect(screen).toMatch(named);
      const inspected = onPath([`pi-handoff inspect ${manifest.id}`]);
      expect(inspected.stderr).toBe("");
      expect(inspected.status).toBe(0);
      expect(inspected.stdout).toContain("release/first");

      // Without the README's PATH line, inspect names this copy's launcher by its path, which runs as printed.
      const launcher = join(installed(), "bin", "pi-handoff.mjs");
      const bare = run(launcher, ["inspect", manifest.id], repo.root, sandbox.env);
      expect(bare.status, bare.stderr).toBe(0);
      const next = bare.stdout.split("\n").find((line) => line.startsWith("  next:")) ?? "";
      expect(next).toBe(`  next:          ${launcher} focus ${manifest.id} | quit its Pi first to remove it`);
      const focused = sh([`${launcher} focus ${manifest.id}`], repo.root, sandbox.env);
      expect(focused.status, focused.stderr).toBe(0);
    });

    it("updates to the next published version, and a new session shows its changelog entry", {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      // The next version: this tarball with its version raised and an entry above the others.
      const next = join(work, "next");
      mkdirSync(next);
      expect(run("tar", ["xzf", tarball, "-C", next, "--strip-components=1"], work, sandbox.env).status).toBe(0);
      const manifestFile = join(next, "package.json");
      writeFileSync(
        manifestFile,
        readFileSync(manifestFile, "utf8").replace(`"version": "${PACKAGE.version}"`, `"version": "${NEXT_VERSION}"`),
      );
      const changelog = readFileSync(join(next, "CHANGELOG.md"), "utf8");
      const firstRelease = changelog.search(/^## \[\d/m);
      writeFileSync(
        join(next, "CHANGELOG.md"),
        `${changelog.slice(0, firstRelease)}## [${NEXT_VERSION}] - 2026-12-07\n\n${NEXT_ENTRY}\n\n${changelog.slice(firstRelease)}`,
      );
      const packed = run(
        "npm",
        ["pack", "--silent", "--ignore-scripts", "--pack-destination", work],
        next,
        sandbox.env,
      );
      expect(packed.status, packed.stderr).toBe(0);
      const nextTarball = join(work, `${PACKAGE.name}-${NEXT_VERSION}.tgz`);
      const published = run(
        "npm",
        ["publish", nextTarball, "--userconfig", registry.publisherConfig],
        work,
        sandbox.env,
      );
      expect(published.status, published.stderr).toBe(0);

      // The README's update line, as a user's shell runs it (Pi updates nothing offline).
      const line = /`(pi update npm:[^`]+)`/.exec(readmeSection("Install"))?.[1] ?? "";
      expect(line).toBe(`pi update npm:${PACKAGE.name}`);
      const { PI_OFFLINE: _offline, ...online } = sandbox.env;
      const updated = run("sh", ["-ec", line], repo.root, online);
      expect(updated.status, updated.stderr).toBe(0);
      expect(`${updated.stdout}${updated.stderr}`).toContain(
        `npm:${PACKAGE.name} ${PACKAGE.version} -> ${NEXT_VERSION}`,
      );
      expect(JSON.parse(readFileSync(join(installed(), "package.json"), "utf8")).version).toBe(NEXT_VERSION);

      const window = (
        await tmux.tmux(["new-window", "-d", "-P", "-F", "#{pane_id}", "-t", `${tmux.sessionId}:`])
      ).trim();
      const fresh = tmuxPane(tmux, window);
      await fresh.type(`cd '${repo.root}' && exec pi --model ${FAUX_MODEL}`);
      await fresh.enter();
      await waitForScreen(fresh, new RegExp(NEXT_ENTRY.slice(2)), "the update's changelog entry", 60_000);
      expect(await fresh.read()).toMatch(new RegExp(`${PACKAGE.name} \\[?${NEXT_VERSION.replaceAll(".", "\\.")}`));
      const freshPid = Number((await tmux.tmux(["display-message", "-p", "-t", window, "#{pane_pid}"])).trim());
      await killAndWait(freshPid);
    });

    it("uninstalls as the README says, leaving nothing of the package in the agent dir", {
      timeout: STEP_TIMEOUT_MS,
    }, async () => {
      // The child made a commit worth keeping, and its Pi was quit (remove refuses while it runs).
      const worktree = manifest.worktree.path;
      writeFileSync(join(worktree, "kept.txt"), "kept\n");
      expect(run("git", ["add", "kept.txt"], worktree, repo.env as Record<string, string>).status).toBe(0);
      expect(run("git", ["commit", "-qm", "Kept"], worktree, repo.env as Record<string, string>).status).toBe(0);
      await killAndWait(manifest.child.pid ?? 0);

      // First, while pi-handoff is still there: the README's steps, for this handoff.
      const steps = codeBlocks(uninstall, "")[0] ?? [];
      expect(steps.map((line) => line.split(" ")[1])).toEqual(["list", "land", "remove", "prune"]);
      const before = onPath(steps.map((line) => line.replaceAll("<id>", manifest.id)));
      expect(before.status, before.stderr).toBe(0);
      expect(existsSync(worktree)).toBe(false);
      expect(
        run("git", ["show", "-s", "--format=%s", "main"], repo.root, repo.env as Record<string, string>).stdout,
      ).toBe("Kept\n");

      // Then the package, with every Pi quit.
      await killAndWait(parentPid);
      expect(isProcessAlive(parentPid)).toBe(false);
      const removal = codeBlocks(uninstall, "sh")[0] ?? [];
      expect(removal[0]).toBe(`pi remove npm:${PACKAGE.name}`);
      const removed = sh(removal, sandbox.home, sandbox.env);
      expect(removed.status, removed.stderr).toBe(0);
      expect(onPath(["command -v pi-handoff"]).status).not.toBe(0);

      // What stays is Pi's: its settings without the package, its npm directory without it, the
      // sessions (the child's among them), and the test's offline model.
      const left = filesUnder(sandbox.agentDir).filter((file) => !file.startsWith("sessions/"));
      expect(left).toEqual([
        "auth.json",
        "extensions/faux-provider.ts",
        "models-store.json",
        "npm/.gitignore",
        "npm/node_modules/.package-lock.json",
        "npm/package-lock.json",
        "npm/package.json",
        "settings.json",
      ]);
      for (const file of left.filter((name) => name !== "settings.json"))
        expect(readFileSync(join(sandbox.agentDir, file), "utf8"), file).not.toContain(PACKAGE.name);
      // Pi's own record of the changelog entries shown, so a reinstall shows only newer ones.
      expect(JSON.parse(readFileSync(join(sandbox.agentDir, "settings.json"), "utf8"))).toEqual({
        packages: [],
        lastChangelogVersion: expect.any(String),
        extensionChangelogVersions: {
          [JSON.stringify({ source: `npm:${PACKAGE.name}`, scope: "user" })]: NEXT_VERSION,
        },
      });
      expect(readdirSync(join(sandbox.agentDir, "sessions")).length).toBeGreaterThan(0);
      // The branch stays, as the README says.
      expect(
        run("git", ["rev-parse", "--verify", "-q", "release/first"], repo.root, repo.env as Record<string, string>)
          .status,
      ).toBe(0);
    });
  });
});
