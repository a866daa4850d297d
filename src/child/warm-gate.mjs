/**
 * The warm start's gate: preloaded (`node --import <this> <pi entry>`) by a window's launcher
 * while the handoff still checks the worktree out and forks the conversation, it loads Pi's
 * modules, then holds Pi back until the launch step says go; Pi then starts from its own entry,
 * with its modules already loaded. Plain JavaScript: it runs in the child's Node before anything.
 *
 * Invariants:
 * - It acts only in the main thread of the process it was started for (`PI_HANDOFF_WARM` set:
 *   its files), and removes that variable and its `--import` before Pi runs, so a worker or a process Pi
 *   starts never waits here.
 * - What it loads early is what Pi's entry loads before its own body: the entry's static
 *   relative imports, and those of a module the entry `require`s. Nothing else runs early, and a
 *   load that fails is left for Pi's own start to report.
 * - Pi runs only with exactly what the launch step wrote (warm-start.ts: `argv`, `cwd`, variables)
 *   and only when every variable it sets already had that value when this process started (the
 *   modules were loaded with them); otherwise it exits without running Pi, leaving the go file, and
 *   the launcher starts Pi cold. Taking the go file away is the launcher's sign that Pi ran here;
 *   the `ran` note (`<token> <pid>`) says so to anyone who looks later.
 * - It never outlives its launcher: a parent that changed (the launcher died) ends the wait.
 */
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { enableCompileCache } from "node:module";
import { pathToFileURL } from "node:url";
import { isMainThread } from "node:worker_threads";

const WARM_ENV = "PI_HANDOFF_WARM";
const STATIC_IMPORT = /(?:^|[;\n}])\s*(?:import|export)\s*(?:[\w$*{},\s]*?\bfrom\s*)?["'](\.\.?\/[^"']+)["']/g;
const REQUIRED = /(?:\brequire|\))\(\s*["'](\.\.?\/[^"']+)["']\s*\)/g;
/** Entry files longer than this are not read for imports: Pi's are a few hundred bytes. */
const MAX_ENTRY_BYTES = 64 * 1024;

const files = isMainThread ? warmFiles(process.env[WARM_ENV]) : undefined;
if (files !== undefined) {
  delete process.env[WARM_ENV];
  dropOwnImport();
  const started = { ...process.env };
  const parent = process.ppid;
  await preload(process.argv[1]);
  const token = await goToken(files.go, parent);
  const spec = token === undefined ? undefined : readSpec(files.spec, token);
  if (spec === undefined || !matches(spec, started)) process.exit(0);
  process.chdir(spec.cwd);
  // As the launcher's `cd` sets it for a cold start: what Pi's shells take for their directory.
  process.env.PWD = spec.cwd;
  for (const [name, value] of spec.env) process.env[name] = value;
  process.argv.splice(2, process.argv.length - 2, ...spec.argv.slice(2));
  writeFileSync(`${files.ran}.${process.pid}.tmp`, `${token} ${process.pid}\n`);
  renameSync(`${files.ran}.${process.pid}.tmp`, files.ran);
  unlinkSync(files.go);
}

/** `{go, spec, ran}` from the variable, when it names them all. */
function warmFiles(text) {
  try {
    const files = JSON.parse(text ?? "null");
    return ["go", "spec", "ran"].every((name) => typeof files?.[name] === "string") ? files : undefined;
  } catch {
    return undefined;
  }
}

/** `--import <this>` out of `execArgv`, which `child_process.fork` passes on. */
function dropOwnImport() {
  const self = import.meta.url;
  for (let i = 0; i < process.execArgv.length; i++) {
    const arg = process.execArgv[i];
    if (arg === `--import=${self}`) process.execArgv.splice(i--, 1);
    else if (arg === "--import" && process.execArgv[i + 1] === self) process.execArgv.splice(i--, 2);
  }
}

async function preload(entry) {
  if (entry === undefined) return;
  enableCompileCache();
  const entryUrl = pathToFileURL(entry);
  const entrySource = readSmall(entryUrl);
  if (entrySource === undefined) return;
  const early = specifiers(entrySource, STATIC_IMPORT).map((s) => new URL(s, entryUrl));
  for (const required of specifiers(entrySource, REQUIRED)) {
    const url = new URL(required, entryUrl);
    const source = readSmall(url);
    if (source !== undefined) early.push(...specifiers(source, STATIC_IMPORT).map((s) => new URL(s, url)));
  }
  for (const url of early) {
    try {
      await import(url.href);
    } catch {
      return;
    }
  }
}

function specifiers(source, pattern) {
  return [...new Set([...source.matchAll(pattern)].map((match) => match[1]))];
}

function readSmall(url) {
  try {
    const text = readFileSync(url, "utf8");
    return text.length <= MAX_ENTRY_BYTES ? text : undefined;
  } catch {
    return undefined;
  }
}

/** The launch token in the go file once it appears; undefined when the launcher is gone first. */
async function goToken(file, parent) {
  let nap = 2;
  for (;;) {
    if (existsSync(file)) {
      try {
        return readFileSync(file, "utf8").trim();
      } catch {
        return undefined;
      }
    }
    if (process.ppid !== parent) return undefined;
    await new Promise((resolve) => setTimeout(resolve, nap));
    nap = Math.min(25, nap + 1);
  }
}

/** The launch step's spec when it is this launch's and well formed. */
function readSpec(file, token) {
  try {
    const spec = JSON.parse(readFileSync(file, "utf8"));
    const words = (value) => Array.isArray(value) && value.every((word) => typeof word === "string");
    if (spec === null || typeof spec !== "object" || spec.token !== token || typeof spec.cwd !== "string")
      return undefined;
    if (!words(spec.argv) || !Array.isArray(spec.env) || !spec.env.every((pair) => words(pair) && pair.length === 2))
      return undefined;
    return spec;
  } catch {
    return undefined;
  }
}

function matches(spec, started) {
  return (
    spec.argv[0] === process.execPath &&
    spec.argv[1] === process.argv[1] &&
    spec.env.every(([name, value]) => started[name] === value)
  );
}
