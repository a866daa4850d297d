/**
 * The README's install commands, run as a user runs them, into an isolated Pi: the package is
 * packed (`npm pack`, what the registry would serve), then each command of the README's Install
 * section is run as written, with Pi's own CLI (node_modules/@earendil-works/pi-coding-agent) and
 * the project's Node 22 first on PATH. The only change: the registry name `npm:pi-handoff-worktree`
 * becomes `npm:pi-handoff-worktree@file:<the tarball>` (npm's spelling of the same package from a
 * file). Then a new user's first steps: the extension loads, `pi-handoff` is where the README says,
 * no second Pi was installed, and a real handoff prints no warning, neither in the parent's
 * terminal nor in the new pane.
 *
 * npm needs the registry for the package's dependencies (as a user's install does).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDOFF_HELP } from "../../src/handoff/args.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { createTempRepo, type TempRepo } from "../support/git-repo.ts";
import {
  createPiSandbox,
  FAUX_MODEL,
  onlySessionFile,
  PROJECT_ROOT,
  runPiPrint,
  type PiSandbox,
} from "../support/pi.ts";
import { killAndWait } from "../support/recovery-rig.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";

const PACKAGE = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
};
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
/** An install downloads packages and starts several Pis: more than the suite's default, on a loaded machine. */
const INSTALL_TIMEOUT_MS = 240_000;

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** The `sh` blocks of the README's Install section, one command per line. */
function readmeInstallBlocks(): string[][][] {
  const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## Install\n"), readme.indexOf("\n## Use\n"));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((block) =>
    (block[1] ?? "")
      .split("\n")
      .map((line) => line.replace(/#.*$/, "").trim())
      .filter((line) => line !== "")
      .map((line) => line.split(/\s+/)),
  );
}

function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs = 180_000,
): Run {
  const result = spawnSync(command, args, {
    cwd,
    env,
    encoding: "utf8",
    timeout: timeoutMs,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

describe("installed as the README says", () => {
  let packDir: string;
  let tarball: string;
  let blocks: string[][][];
  const sandboxes: PiSandbox[] = [];
  /** One npm cache for every install here (inside the first sandbox): each package is downloaded once. */
  let npmCache: string | undefined;

  /** An isolated Pi (own HOME and agent dir, offline model) that may reach the npm registry. */
  function isolatedPi(): PiSandbox {
    const sandbox = createPiSandbox("phw-install-");
    sandboxes.push(sandbox);
    npmCache ??= join(sandbox.dir, "npm-cache");
    const registry = process.env.npm_config_registry;
    Object.assign(sandbox.env, {
      npm_config_update_notifier: "false",
      npm_config_cache: npmCache,
      npm_config_prefer_offline: "true",
    });
    if (registry !== undefined) sandbox.env.npm_config_registry = registry;
    return sandbox;
  }

  /** Runs a README command line as written (`pi` and `npm` from PATH), in `cwd`. */
  function runLine(words: readonly string[], cwd: string, sandbox: PiSandbox): Run {
    const [command = "", ...args] = words.map((word) =>
      word === `npm:${PACKAGE.name}` ? `npm:${PACKAGE.name}@file:${tarball}` : word,
    );
    return run(command, args, cwd, sandbox.env);
  }

  beforeAll(() => {
    blocks = readmeInstallBlocks();
    const sandbox = isolatedPi();
    packDir = join(sandbox.dir, "pack");
    mkdirSync(packDir);
    const packed = run("npm", ["pack", "--silent", "--pack-destination", packDir], PROJECT_ROOT, sandbox.env);
    expect(packed.status, packed.stderr).toBe(0);
    tarball = join(packDir, packed.stdout.trim().split("\n").at(-1) ?? "");
    expect(existsSync(tarball)).toBe(true);
  }, INSTALL_TIMEOUT_MS);

  afterAll(() => {
    for (const sandbox of sandboxes) sandbox.cleanup();
  });

  it("documents exactly two ways: from npm, and from a checkout", () => {
    expect(blocks).toEqual([
      [["pi", "install", `npm:${PACKAGE.name}`]],
      [
        ["npm", "ci", "--omit=dev"],
        ["pi", "install", "."],
      ],
    ]);
  });

  describe("from npm", () => {
    let sandbox: PiSandbox;
    let repo: TempRepo;
    let tmux: PrivateTmux | undefined;

    beforeAll(() => {
      sandbox = isolatedPi();
      repo = createTempRepo({ prefix: "phw-install-repo-" });
    });
    afterAll(async () => {
      await tmux?.kill();
      repo?.cleanup();
    });

    it("installs the extension and pi-handoff into the agent dir, and no second Pi", {
      timeout: INSTALL_TIMEOUT_MS,
    }, () => {
      for (const line of blocks[0] ?? []) {
        const installed = runLine(line, sandbox.home, sandbox);
        expect(installed.status, installed.stderr).toBe(0);
        expect(installed.stderr).not.toMatch(NODE_WARNING);
      }
      const modules = join(sandbox.agentDir, "npm", "node_modules");
      expect(JSON.parse(readFileSync(join(modules, PACKAGE.name, "package.json"), "utf8"))).toMatchObject({
        name: PACKAGE.name,
        version: PACKAGE.version,
      });
      // Pi's packages are optional peers: npm left them to the Pi that loads the extension.
      expect(existsSync(join(modules, "@earendil-works"))).toBe(false);
      expect(existsSync(join(modules, "typebox"))).toBe(false);
      // `pi install` linked the recovery command where the README says.
      const bin = join(modules, ".bin", "pi-handoff");
      expect(readdirSync(join(modules, ".bin"))).toContain("pi-handoff");
      expect(run(bin, ["--version"], sandbox.home, sandbox.env)).toEqual({
        status: 0,
        stdout: `pi-handoff ${PACKAGE.version}\n`,
        stderr: "",
      });
    });

    it("loads in Pi, and a first handoff prints no warning in either terminal", {
      timeout: INSTALL_TIMEOUT_MS,
    }, async () => {
      // Which package roots Node's own loader serves (pi-extension/index.ts), read once Pi started.
      const probeOut = join(sandbox.dir, "loader-roots.json");
      writeFileSync(join(sandbox.agentDir, "extensions", "loader-probe.ts"), LOADER_PROBE);
      runPiPrint(sandbox, repo.root, ["--model", FAUX_MODEL, "first question"], { PHW_LOADER_PROBE: probeOut });
      rmSync(join(sandbox.agentDir, "extensions", "loader-probe.ts"));
      // The installed package's modules were loaded by Node's loader, not by jiti.
      const installedRoot = join(sandbox.agentDir, "npm", "node_modules", PACKAGE.name);
      expect(JSON.parse(readFileSync(probeOut, "utf8"))).toEqual([`${pathToFileURL(installedRoot).href}/`]);
      const parent = onlySessionFile(sandbox, repo.root);
      tmux = await startPrivateTmux({ env: sandbox.env });
      const serverPid = (await tmux.tmux(["display-message", "-p", "#{pid}"])).trim();
      const env = {
        ...sandbox.env,
        TMUX: `${tmux.socketPath},${serverPid},0`,
        TMUX_PANE: tmux.firstPaneId,
        PI_HANDOFF_CONFIRM_TIMEOUT_MS: "30000",
      };
      // Loaded from the agent dir's settings alone: no --extension.
      const handoff = run(
        "pi",
        ["-p", "--session", parent, "--model", FAUX_MODEL, "/handoff-worktree install/first -- say hello"],
        repo.root,
        env,
      );
      expect(handoff.status, handoff.stderr).toBe(0);
      expect(handoff.stderr).toContain("Handed off to branch install/first");
      expect(handoff.stderr).not.toMatch(NODE_WARNING);

      const [entry] = await ManifestStore.forAgentDir(sandbox.agentDir).list();
      if (entry === undefined || !entry.ok) throw new Error("no manifest");
      const manifest = entry.manifest;
      expect(manifest.state).toBe("running");
      const pane = manifest.mux.kind === "tmux" ? (manifest.mux.paneId ?? "") : "";
      const privateTmux = tmux;
      // Confirmed already; drawing its first turn is the child's own pace on a loaded machine.
      await waitFor(async () => (await privateTmux.capturePane(pane)).includes("say hello"), {
        timeoutMs: 90_000,
        description: "the child Pi to show its task",
      });
      expect(await privateTmux.capturePane(pane)).not.toMatch(NODE_WARNING);

      // The installed pi-handoff finds it.
      const listed = run(
        join(sandbox.agentDir, "npm", "node_modules", ".bin", "pi-handoff"),
        ["list"],
        repo.root,
        sandbox.env,
      );
      expect(listed.stderr).toBe("");
      expect(listed.stdout).toMatch(
        new RegExp(`\\n${manifest.id} +child running \\(pid ${manifest.child.pid}\\) +.+? +install/first `),
      );
      await killAndWait(manifest.child.pid ?? 0);
    });
  });

  it("npm install of the package, as npm i -g and npx -p do, pulls in no second Pi and gives pi-handoff", {
    timeout: INSTALL_TIMEOUT_MS,
  }, () => {
    const sandbox = isolatedPi();
    const prefix = join(sandbox.dir, "global");
    // Without Pi's --legacy-peer-deps: npm installs required peers itself, optional ones it leaves alone.
    const installed = run(
      "npm",
      ["install", "--no-audit", "--no-fund", "--prefix", prefix, tarball],
      sandbox.home,
      sandbox.env,
    );
    expect(installed.status, installed.stderr).toBe(0);
    const modules = join(prefix, "node_modules");
    expect(readdirSync(modules).filter((name) => name === "@earendil-works" || name === "typebox")).toEqual([]);
    expect(run(join(modules, ".bin", "pi-handoff"), ["--version"], sandbox.home, sandbox.env)).toEqual({
      status: 0,
      stdout: `pi-handoff ${PACKAGE.version}\n`,
      stderr: "",
    });
  });

  it("from a checkout: pi install alone cannot load it, npm ci --omit=dev then pi install . can", {
    timeout: INSTALL_TIMEOUT_MS,
  }, () => {
    const sandbox = isolatedPi();
    // A checkout's files: what the package ships, plus the lock file npm ci installs from.
    const checkout = join(sandbox.dir, "checkout");
    mkdirSync(checkout);
    expect(run("tar", ["xzf", tarball, "-C", checkout, "--strip-components=1"], checkout, sandbox.env).status).toBe(0);
    copyFileSync(join(PROJECT_ROOT, "package-lock.json"), join(checkout, "package-lock.json"));
    const help = (): Run =>
      run("pi", ["-p", "--no-session", "--model", FAUX_MODEL, "/handoff-worktree --help"], sandbox.home, sandbox.env);

    // What the README warns about: Pi installs nothing in a local directory.
    expect(run("pi", ["install", "."], checkout, sandbox.env).status).toBe(0);
    const bare = help();
    expect(bare.status).toBe(1);
    expect(bare.stderr).toContain("Cannot find module 'zod'");

    for (const line of blocks[1] ?? []) {
      const done = runLine(line, checkout, sandbox);
      expect(done.status, `${line.join(" ")}: ${done.stderr}`).toBe(0);
    }
    // --omit=dev: no Pi of its own in the checkout either.
    expect(existsSync(join(checkout, "node_modules", "zod"))).toBe(true);
    expect(existsSync(join(checkout, "node_modules", "@earendil-works"))).toBe(false);
    expect(help()).toEqual({ status: 0, stdout: "", stderr: `${HANDOFF_HELP}\n` });
  });
});
