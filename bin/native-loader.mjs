// This package's TypeScript, loaded by Node's own module loader: in the `pi-handoff` CLI, in Pi, and
// in the fork's worker thread (src/session/fork-worker.mjs).
//
// Why: Node strips the types of each .ts file on every load and keeps nothing of it (its compile
// cache keeps only the compiled JavaScript), and it refuses to strip files under node_modules,
// where an installed copy of this package lives. Pi loads extensions through jiti, which evaluates
// every module again on every start, outside Node's compile cache. For this package's 150-odd
// modules either cost most of a start.
//
// `installTypeScriptLoader` registers module hooks (`module.registerHooks`, in this thread) that:
// - serve each .ts file under the package root (not under a node_modules inside it) with its types
//   stripped by Node's own `stripTypeScriptTypes` (whitespace in place of the types, so every line
//   and column is where it was in the .ts file), kept in a cache directory named by a hash of the
//   Node version and the file's bytes: an edited file is stripped again, an unchanged one never is;
// - resolve the bare specifiers given as host modules, when imported from under the root, to the
//   module objects given: in Pi, the instances Pi gave the extension, never a second copy.
//
// Invariants:
// - It only ever serves what Node's own type stripping produced from the file's current bytes.
// - The cache is used only when its directory belongs to this user and no one else can write to
//   it: a file there runs as this package's code. Otherwise every file is stripped, nothing kept.
// - Installing twice for one root in one thread registers nothing more (Pi loads an extension again
//   on /reload); hooks and that record are per thread, so a worker installs its own.
// - Threads of one process (Pi and its fork worker) may keep the same file at once: each writes
//   its own temporary file, named by pid and thread, and renames it into place.
// - Anything that goes wrong with one file leaves it to Node's own loading.
//
// Plain JavaScript with nothing newer than what old Node versions parse (see pi-handoff.mjs).
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import module from "node:module";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { threadId } from "node:worker_threads";

const HOST_SCHEME = "pi-handoff-host:";
/** Per thread: the roots hooked already, and the host modules served (read by the generated modules). */
const STATE_KEY = "__piHandoffWorktreeNativeLoader";

/**
 * Where the stripped files are kept: beside this thread's compile cache (undefined without one).
 * The CLI, Pi's extension and the fork worker all keep them there, so each strips a file once.
 */
export function strippedCacheDir() {
  const compileCache = typeof module.getCompileCacheDir === "function" ? module.getCompileCacheDir() : undefined;
  return compileCache === undefined ? undefined : join(compileCache, "pi-handoff-ts");
}

/** Whether this Node can load the package this way (module hooks and type stripping). */
export function canLoadTypeScript() {
  return typeof module.registerHooks === "function" && typeof module.stripTypeScriptTypes === "function";
}

/**
 * Hooks `root` (a file: URL ending in "/"): its .ts files, stripped and kept in `cacheDir` (may be
 * undefined: strip without keeping), and `hostModules` ({ specifier: module object }) for what
 * those files import. Returns false when this Node cannot (see canLoadTypeScript).
 */
export function installTypeScriptLoader(root, cacheDir, hostModules) {
  if (!canLoadTypeScript()) return false;
  const state = processState();
  if (state.roots.indexOf(root) !== -1) return true;
  state.roots.push(root);
  const hosts = hostModules || {};
  const hostNames = Object.keys(hosts);
  for (const name of hostNames) state.hosts[name] = hosts[name];
  const keep = usableCacheDir(cacheDir);
  module.registerHooks({
    resolve(specifier, context, nextResolve) {
      if (
        hostNames.indexOf(specifier) !== -1 &&
        typeof context.parentURL === "string" &&
        ownFile(root, context.parentURL)
      )
        return { url: HOST_SCHEME + specifier, format: "module", shortCircuit: true };
      return nextResolve(specifier, context);
    },
    load(url, context, nextLoad) {
      if (url.startsWith(HOST_SCHEME)) {
        const name = url.slice(HOST_SCHEME.length);
        if (!(name in state.hosts)) return nextLoad(url, context);
        return { format: "module", source: hostModuleSource(name, state.hosts[name]), shortCircuit: true };
      }
      if (!url.endsWith(".ts") || !ownFile(root, url)) return nextLoad(url, context);
      const source = stripped(fileURLToPath(url), keep);
      if (source === undefined) return nextLoad(url, context);
      return { format: "module", source, shortCircuit: true };
    },
  });
  return true;
}

function processState() {
  if (globalThis[STATE_KEY] === undefined) globalThis[STATE_KEY] = { roots: [], hosts: {} };
  return globalThis[STATE_KEY];
}

/** Under the root, and not in a dependency installed inside it. */
function ownFile(root, url) {
  return url.startsWith(root) && url.slice(root.length).indexOf("node_modules/") === -1;
}

/**
 * A module exporting each name the host module has, read from it once (its values are the host's
 * own: functions, classes, constants). The local name cannot clash with an export (`Symbol` is one).
 */
function hostModuleSource(name, namespace) {
  const names = Object.keys(namespace).filter((key) => /^[A-Za-z_$][\w$]*$/.test(key) && key !== "default");
  const lines = ["const __host = globalThis." + STATE_KEY + ".hosts[" + JSON.stringify(name) + "];"];
  for (const key of names) lines.push("export const " + key + " = __host." + key + ";");
  if ("default" in namespace) lines.push("export default __host.default;");
  return lines.join("\n") + "\n";
}

/** The directory when it is this user's alone (made so when missing), else undefined. */
function usableCacheDir(dir) {
  if (dir === undefined || typeof process.getuid !== "function") return undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const info = statSync(dir);
    if (!info.isDirectory() || info.uid !== process.getuid() || (info.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

function stripped(path, cacheDir) {
  let source;
  try {
    source = readFileSync(path);
  } catch {
    return undefined;
  }
  if (cacheDir === undefined) return strip(source.toString("utf8"));
  const key = createHash("sha256").update(process.version).update("\0").update(source).digest("hex").slice(0, 40);
  const file = join(cacheDir, key + ".js");
  try {
    return readFileSync(file, "utf8");
  } catch {
    // Not kept yet.
  }
  const result = strip(source.toString("utf8"));
  if (result === undefined) return undefined;
  try {
    const temp = file + "." + process.pid + "." + threadId + ".tmp";
    writeFileSync(temp, result, { mode: 0o600 });
    renameSync(temp, file);
  } catch {
    // A cache that cannot be written only costs the next run the stripping.
  }
  return result;
}

/** Node's own type stripping, without its one-time notice that the function is experimental. */
function strip(source) {
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    const options = rest[0];
    const type = typeof options === "string" ? options : options && options.type;
    if (type === "ExperimentalWarning" && String(warning).includes("stripTypeScriptTypes")) return;
    return emitWarning.call(process, warning, ...rest);
  };
  try {
    return module.stripTypeScriptTypes(source, { mode: "strip" });
  } catch {
    return undefined;
  } finally {
    process.emitWarning = emitWarning;
  }
}
