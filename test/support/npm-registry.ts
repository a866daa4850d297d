/**
 * A real npm registry on a loopback port, for the release test: Verdaccio (a devDependency) in its
 * own Node process, with its configuration and storage in a directory the caller owns.
 *
 * Invariants:
 * - The packages named in `own` are served from this registry's storage alone: never looked up
 *   upstream, so a published package of the same name elsewhere can never stand in for the one
 *   the test published. Every other package is proxied from `upstream` (the dependencies a user's
 *   install pulls in), the one registry this machine reaches.
 * - Listens on 127.0.0.1 on a port the system picks; every wait is bounded; `stop()` ends the
 *   process and waits for it (idempotent).
 * - Publishing uses a token of a user made on this registry, in a npm config file of its own: the
 *   installing side's HOME never holds a credential.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { NODE_BIN, PROJECT_ROOT } from "./pi.ts";
import { waitFor } from "./tmux.ts";

/** The registry npm itself uses when nothing else is configured. */
export const PUBLIC_NPM_REGISTRY = "https://registry.npmjs.org/";

export interface NpmRegistry {
  /** `http://127.0.0.1:<port>/`, as `npm_config_registry` takes it. */
  url: string;
  /** A npm config file holding a publishing token for this registry (`npm publish --userconfig <it>`). */
  publisherConfig: string;
  stop(): Promise<void>;
}

/** Runs Verdaccio's server factory on the config file given, on a port the system picks, and prints it. */
const SERVER_SCRIPT = `
import { createRequire } from "node:module";
const require = createRequire(process.argv[1]);
const { runServer } = require("verdaccio");
const server = await runServer(process.argv[2]);
server.listen(0, "127.0.0.1", () => process.stdout.write("phw-registry-port " + server.address().port + "\\n"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
`;

export async function startNpmRegistry(
  dir: string,
  options: { own: readonly string[]; upstream: string },
): Promise<NpmRegistry> {
  const config = join(dir, "config.yaml");
  // JSON is YAML: Verdaccio reads it as its config file.
  const packages: Record<string, Record<string, string>> = {};
  for (const name of options.own) packages[name] = { access: "$all", publish: "$authenticated" };
  packages["**"] = { access: "$all", publish: "$authenticated", proxy: "upstream" };
  writeFileSync(
    config,
    JSON.stringify({
      storage: join(dir, "storage"),
      auth: { htpasswd: { file: join(dir, "htpasswd") } },
      uplinks: { upstream: { url: options.upstream, timeout: "60s", max_fails: 5 } },
      packages,
      log: { type: "stdout", format: "json", level: "error" },
    }),
  );
  const server = spawn(
    NODE_BIN,
    ["--input-type=module", "-e", SERVER_SCRIPT, join(PROJECT_ROOT, "package.json"), config],
    {
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
      // The runner's environment (a machine's CA certificates for the upstream included), no npm settings.
      env: { ...withoutNpmConfig(process.env), HOME: dir },
    },
  );
  let output = "";
  let exited: number | null | undefined;
  server.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  server.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  const done = new Promise<void>((resolve) => {
    server.on("exit", (code) => {
      exited = code;
      resolve();
    });
  });
  const stop = async (): Promise<void> => {
    if (exited !== undefined) return;
    server.kill("SIGTERM");
    const killed = setTimeout(() => server.kill("SIGKILL"), 5_000);
    await done;
    clearTimeout(killed);
  };
  try {
    const port = await waitFor(
      () => {
        if (exited !== undefined) throw new Error(`Verdaccio exited (${exited}) before it listened:\n${output}`);
        return /^phw-registry-port (\d+)$/m.exec(output)?.[1];
      },
      { timeoutMs: 30_000, intervalMs: 50, description: `Verdaccio to listen (it said: ${output})` },
    );
    const url = `http://127.0.0.1:${port}/`;
    const publisherConfig = join(dir, "publisher.npmrc");
    writeFileSync(publisherConfig, `//127.0.0.1:${port}/:_authToken=${await addUser(url)}\n`);
    return { url, publisherConfig, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function withoutNpmConfig(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && !key.toLowerCase().startsWith("npm_")) kept[key] = value;
  }
  return kept;
}

/** Makes the publishing user (npm's `adduser` request) and returns its token. */
async function addUser(url: string): Promise<string> {
  const response = await fetch(`${url}-/user/org.couchdb.user:publisher`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "publisher", password: "publisher-password" }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await response.json()) as { token?: unknown };
  if (!response.ok || typeof body.token !== "string") {
    throw new Error(`The registry refused the publishing user: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.token;
}
