/**
 * `pi-handoff env`: the export lines evaluated by a real sh set exactly the recorded bytes and run
 * nothing, whatever the values hold; `--json` against the published schema; a removed handoff and
 * one that sets nothing; the same variables the launcher derives.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { handoffVariables } from "../../src/child/launch-command.ts";
import { newManifest } from "../../src/manifest/factory.ts";
import type { Manifest } from "../../src/manifest/schema.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, main } from "../../src/cli/cli.ts";
import { EnvReportSchema } from "../../src/inventory/report-schema.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";
import { hostileWords } from "../support/hostile-words.ts";

const SHA = "0123456789abcdef0123456789abcdef01234567";
/** Writes this process's environment, NUL-separated, to stdout. */
const DUMP_ENV = "process.stdout.write(Object.entries(process.env).map(([k, v]) => k + '=' + v).join('\\0'))";

describe("pi-handoff env", () => {
  let dir: string;
  let agentDir: string;
  let store: ManifestStore;

  beforeEach(() => {
    dir = makeTempDir("phw-env-");
    agentDir = join(dir, "agent");
    store = ManifestStore.forAgentDir(agentDir);
  });
  afterEach(() => removeTempDir(dir));

  async function handoff(branch: string, extra: Partial<Manifest> = {}): Promise<Manifest> {
    const manifest = {
      ...newManifest({
        id: store.newId(branch),
        now: new Date(),
        branch,
        base: { ref: "main", sha: SHA },
        repo: { root: dir, commonDir: join(dir, ".git") },
        parent: { sessionFile: join(dir, "p.jsonl"), sessionId: "p", leafId: "l", cwd: dir },
        worktree: { path: join(dir, "wt", branch) },
        mux: { kind: "tmux" },
      }),
      ...extra,
    };
    const created = await store.create(manifest);
    if (!created.ok) throw new Error(created.message);
    return created.manifest;
  }

  async function run(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
    let stdout = "";
    let stderr = "";
    const status = await main(args, {
      env: { PI_CODING_AGENT_DIR: agentDir, PATH: process.env.PATH ?? "/usr/bin:/bin" },
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
      execPath: process.execPath,
    });
    return { status, stdout, stderr };
  }

  it("prints export lines that a real sh evaluates to exactly the recorded bytes, running nothing", async () => {
    const canary = join(dir, "CANARY");
    const env = Object.fromEntries(hostileWords(canary).map((word, index) => [`HOSTILE_${index}`, word]));
    const manifest = await handoff("feat/x", { ports: [20000, 20001], env });
    const printed = await run(["env", "feat/x"]);
    expect(printed).toMatchObject({ status: EXIT_OK, stderr: "" });
    expect(printed.stdout.split("\n").slice(0, 2)).toEqual([
      "export PI_HANDOFF_PORT=20000",
      "export PI_HANDOFF_PORTS=20000,20001",
    ]);
    // eval "$(pi-handoff env feat/x)", then a process reads its environment.
    const shell = spawnSync(
      "/bin/sh",
      ["-c", 'eval "$1"; exec "$2" -e "$3"', "sh", printed.stdout, process.execPath, DUMP_ENV],
      {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOSTILE_3: "from outside" },
        encoding: "utf8",
        timeout: 15_000,
      },
    );
    expect(shell.status, shell.stderr).toBe(0);
    const seen = Object.fromEntries(
      shell.stdout
        .split("\0")
        .filter((entry) => /^(PI_HANDOFF_PORTS?|HOSTILE_\d+)=/.test(entry))
        .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
    );
    // The launcher's derivation, byte for byte.
    expect(seen).toEqual(Object.fromEntries(handoffVariables(manifest)));
    expect(seen).toEqual({ PI_HANDOFF_PORT: "20000", PI_HANDOFF_PORTS: "20000,20001", ...env });
    expect(existsSync(canary)).toBe(false);

    const json = await run(["env", manifest.id, "--json"]);
    expect(json.status).toBe(EXIT_OK);
    expect(EnvReportSchema.parse(JSON.parse(json.stdout))).toEqual({
      version: 1,
      id: manifest.id,
      branch: "feat/x",
      worktreePath: manifest.worktree.path,
      ports: [20000, 20001],
      env: { PI_HANDOFF_PORT: "20000", PI_HANDOFF_PORTS: "20000,20001", ...env },
    });
  });

  it("prints nothing to evaluate for a handoff that sets nothing, and refuses a removed one or an unknown name", async () => {
    const plain = await handoff("feat/plain");
    expect(await run(["env", plain.id])).toEqual({
      status: EXIT_OK,
      stdout: "",
      stderr: `pi-handoff env: Handoff ${plain.id} reserves no ports and sets no variables (the settings had no "ports" or "env" when it was made).\n`,
    });
    const gone = await handoff("feat/gone", { ports: [20005] });
    await store.transition(gone.id, "failed");
    await store.transition(gone.id, "removed");
    expect(await run(["env", gone.id])).toEqual({
      status: EXIT_REFUSED,
      stdout: "",
      stderr: `pi-handoff env: Handoff ${gone.id} was removed, so its ports were released (another handoff may hold them now) and it sets nothing.\n`,
    });
    const unknown = await run(["env", "feat/none"]);
    expect(unknown.status).toBe(EXIT_USAGE);
    expect(unknown.stdout).toBe("");
    expect((await run(["env"])).status).toBe(EXIT_USAGE);
    expect((await run(["env", plain.id, "--export"])).stderr).toBe(
      'pi-handoff env: Unknown option "--export" (see pi-handoff --help).\n',
    );
  });
});
