/**
 * How recovery starts Pi when the process doing it is not Pi itself (the `pi-handoff` CLI): the
 * recorded launch command may name a Pi or a Node that is gone, so the command is found afresh.
 * Also how a person runs this package's `pi-handoff` from a shell, for the notices that name it;
 * here, below both the handoff and recovery, since both name it.
 *
 * Invariants:
 * - Looks only: reads PATH entries and the first bytes of a file, runs nothing.
 * - A message names `pi-handoff` only where a `pi-handoff` is on PATH (each README install route
 *   puts it there); elsewhere it names this copy's launcher by its path, so the command runs as
 *   printed. Every message that names a command of it (a handoff's notices, its launcher, its
 *   ports' refusal, relaunch --all) takes it from `recoveryCommand`.
 * - A JavaScript entry (a `node` shebang, as npm's `pi` bin has) is run with this process's Node,
 *   which the `pi-handoff` launcher has checked is new enough; `/usr/bin/env node` could pick an
 *   older system Node that Pi does not start on.
 */
import { accessSync, closeSync, constants, openSync, readFileSync, readSync, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { shellQuote } from "./launch-command.ts";

const PI_PACKAGE = "@earendil-works/pi-coding-agent";
const PI_BIN = "pi";
const RECOVERY_BIN = "pi-handoff";
/** This copy's `pi-handoff` launcher (package.json `bin`). */
const RECOVERY_LAUNCHER = fileURLToPath(new URL("../../bin/pi-handoff.mjs", import.meta.url));

/**
 * The command a person types in a shell with `env`'s PATH to run `pi-handoff`: its name when one
 * is on PATH, else this copy's launcher by its path (quoted for a shell).
 */
export function recoveryCommand(
  env: Readonly<Record<string, string | undefined>>,
  launcher = RECOVERY_LAUNCHER,
): string {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir !== "" && executableFile(join(dir, RECOVERY_BIN)) !== undefined) return RECOVERY_BIN;
  }
  return shellQuote(launcher);
}

/**
 * The command that starts Pi: `pi` on `PATH` first (the Pi the user runs), else the Pi package
 * installed next to this one. Undefined when neither exists.
 */
export function findPiCommand(
  env: Readonly<Record<string, string | undefined>>,
  execPath = process.execPath,
): string[] | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = executableFile(join(dir, PI_BIN));
    if (candidate !== undefined) return commandFor(candidate, execPath);
  }
  const packaged = packagedPiCli();
  return packaged === undefined ? undefined : [execPath, packaged];
}

function commandFor(file: string, execPath: string): string[] {
  return isNodeScript(file) ? [execPath, file] : [file];
}

/** The canonical path of an executable regular file, or undefined. */
function executableFile(path: string): string | undefined {
  try {
    const real = realpathSync(path);
    if (!statSync(real).isFile()) return undefined;
    accessSync(real, constants.X_OK);
    return real;
  } catch {
    return undefined;
  }
}

function isNodeScript(file: string): boolean {
  if (/\.(?:m?js|cjs|m?ts)$/.test(file)) return true;
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const head = Buffer.alloc(128);
    const read = readSync(fd, head, 0, head.length, 0);
    const firstLine = head.subarray(0, read).toString("utf8").split("\n")[0] ?? "";
    return firstLine.startsWith("#!") && /\bnode\b/.test(firstLine);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Pi's CLI from a `node_modules` above this file (the package's `bin.pi`). */
function packagedPiCli(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifestPath = join(dir, "node_modules", ...PI_PACKAGE.split("/"), "package.json");
    const bin = piBinOf(manifestPath);
    if (bin !== undefined) return bin;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function piBinOf(manifestPath: string): string | undefined {
  try {
    const manifest: unknown = JSON.parse(readFileSync(manifestPath, "utf8"));
    if (typeof manifest !== "object" || manifest === null || !("bin" in manifest)) return undefined;
    const bin = manifest.bin;
    const relative =
      typeof bin === "string"
        ? bin
        : typeof bin === "object" && bin !== null && PI_BIN in bin
          ? (bin as Record<string, unknown>)[PI_BIN]
          : undefined;
    if (typeof relative !== "string") return undefined;
    return realpathSync(join(dirname(manifestPath), relative));
  } catch {
    return undefined;
  }
}
