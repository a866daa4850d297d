/**
 * The house rules of docs/architecture.md, checked on the source: one module owns each outside
 * system (`node:child_process` is imported by the process core, src/process/spawn.ts, alone, with no
 * exception: src/child/warm-gate.mjs, the plain script preloaded before TypeScript loads, starts
 * no process), the rooms of src/ import each other without a cycle, and the handoff and what comes
 * after it stand on the shared rooms without importing each other.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(?:ts|mts|mjs|js)$/.test(entry.name))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

const FILES = [...sourceFiles("src"), ...sourceFiles("pi-extension")].map((file) => ({
  file,
  text: readFileSync(join(ROOT, file), "utf8"),
}));

/** The files among `FILES` where `pattern` occurs, other than those `owners` allows. */
function outside(pattern: RegExp, owners: (file: string) => boolean): string[] {
  return FILES.filter(({ file, text }) => !owners(file) && pattern.test(text)).map(({ file }) => file);
}

const imports = (module: string): RegExp => new RegExp(`from\\s+["']${module.replace(/[/.]/g, "\\$&")}["']`);

describe("one module owns each outside system", () => {
  it("subprocesses start only in the modules that own them (git, herdr, tmux, process facts)", () => {
    const owners = (file: string): boolean =>
      file.startsWith("src/git/") ||
      file.startsWith("src/mux/herdr/") ||
      file.startsWith("src/mux/tmux/") ||
      file.startsWith("src/mux/zellij/") ||
      file.startsWith("src/process/");
    expect(outside(/from\s+["'](?:node:)?child_process["']/, owners)).toEqual([]);
  });

  it("programs start through Node's child_process alone, imported by the process core (src/process/spawn.ts) alone", () => {
    // A spawning dependency (execa, used before) cost ~80 ms of loading on every Pi start.
    expect(outside(imports("execa"), () => false)).toEqual([]);
    // Any form of import: static, dynamic, `require`. (src/child/warm-gate.mjs, the one plain
    // script run before the package's TypeScript loads, starts nothing: it lets Pi run in its own
    // process.) scripts/ are the developers' tools, outside the rule.
    const childProcess = /(?:from\s+|import\(\s*|require\(\s*)["'](?:node:)?child_process["']/;
    const spawners = FILES.filter(({ text }) => childProcess.test(text)).map(({ file }) => file);
    expect(spawners.sort()).toEqual(["src/process/spawn.ts"]);
  });

  it("a handoff's state changes only in src/manifest/store.ts (`transition`): no other code sets a manifest's state or adds to its history", () => {
    // A landing's or a rebase's own `last.state` is a record's, not the handoff's.
    const setsState = /\b(?:m|manifest|current|draft)\.state\s*=(?!=)|\.history\.push\(/;
    expect(outside(setsState, (file) => file === "src/manifest/store.ts")).toEqual([]);
  });

  it("only src/locks/ takes lock directories (proper-lockfile)", () => {
    expect(outside(/from\s+["']proper-lockfile["']/, (file) => file.startsWith("src/locks/"))).toEqual([]);
  });

  it("only src/ports/probe.ts opens sockets (the bind test of a port)", () => {
    expect(outside(/from\s+["'](?:node:)?(?:net|dgram)["']/, (file) => file === "src/ports/probe.ts")).toEqual([]);
  });

  it("git runs only in src/git/, tmux only in src/mux/tmux/, zellij only in src/mux/zellij/", () => {
    expect(outside(/(?:execa|spawn)\(\s*["']git["']/, (file) => file.startsWith("src/git/"))).toEqual([]);
    expect(outside(/runProgram\(\s*["']tmux["']/, (file) => file.startsWith("src/mux/tmux/"))).toEqual([]);
    expect(outside(/zellijBin/, (file) => file.startsWith("src/mux/zellij/"))).toEqual([]);
  });
});

describe("a terminal is one folder, one location schema and one registry entry", () => {
  it("no code outside src/mux/ and the location schemas names a terminal kind or imports a terminal's folder", () => {
    // A kind as a string (`"tmux"`, `'zellij'`), a comparison with one, or a backend class. The
    // locations a manifest records (src/manifest/locations.ts) are the one place below src/mux/.
    const named = /["'`](?:tmux|herdr|zellij)["'`]|\b(?:Tmux|Herdr|Zellij)Multiplexer\b/;
    const terminalOwned = (file: string): boolean =>
      file.startsWith("src/mux/") || file === "src/manifest/locations.ts";
    expect(outside(named, terminalOwned)).toEqual([]);
    // Outside src/mux/, only the registry, the location union and the interfaces are imported.
    const folder = /from\s+["'](?:\.\.?\/)+(?:src\/)?mux\/(?:tmux|herdr|zellij)\//;
    expect(outside(folder, (file) => file.startsWith("src/mux/"))).toEqual([]);
  });
});

describe("dependencies point inward", () => {
  it("nothing in src/ imports the Pi adapter", () => {
    expect(
      FILES.filter(({ file, text }) => file.startsWith("src/") && /from\s+["'][./]*pi-extension\//.test(text)).map(
        ({ file }) => file,
      ),
    ).toEqual([]);
  });

  /** The rooms of src/ (its folders; a file at src/'s top is a room of its own) and what each imports. */
  function roomGraph(): Map<string, Set<string>> {
    const roomOf = (file: string): string => {
      const [, top = "", rest] = /^src\/([^/]+)(\/.*)?$/.exec(file) ?? [];
      return rest === undefined ? `src/${top}` : `src/${top}/`;
    };
    const anyImport =
      /(?:^|\s)(?:import|export)\s[^;]*?from\s+["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/gms;
    const graph = new Map<string, Set<string>>();
    for (const { file, text } of FILES.filter(({ file }) => file.startsWith("src/"))) {
      const from = roomOf(file);
      const targets = graph.get(from) ?? new Set<string>();
      graph.set(from, targets);
      for (const match of text.matchAll(anyImport)) {
        const target = relative(ROOT, join(ROOT, file, "..", match[1] ?? match[2] ?? ""));
        if (target.startsWith("src/") && roomOf(target) !== from) targets.add(roomOf(target));
      }
    }
    return graph;
  }

  it("no import cycle between the rooms of src/: every arrow points down the map of docs/architecture.md", () => {
    // Tarjan's strongly connected components: a component of more than one room is a cycle.
    const graph = roomGraph();
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const cycles: string[][] = [];
    const visit = (room: string): void => {
      index.set(room, index.size);
      low.set(room, index.get(room) ?? 0);
      stack.push(room);
      for (const next of graph.get(room) ?? []) {
        if (!index.has(next)) {
          visit(next);
          low.set(room, Math.min(low.get(room) ?? 0, low.get(next) ?? 0));
        } else if (stack.includes(next)) low.set(room, Math.min(low.get(room) ?? 0, index.get(next) ?? 0));
      }
      if (low.get(room) === index.get(room)) {
        const component: string[] = [];
        let member: string | undefined;
        do {
          member = stack.pop();
          if (member !== undefined) component.push(member);
        } while (member !== undefined && member !== room);
        if (component.length > 1) cycles.push(component.sort());
      }
    };
    for (const room of graph.keys()) if (!index.has(room)) visit(room);
    expect(cycles).toEqual([]);
  });

  it("the handoff and the rooms of what comes after it (inventory, the verbs, the CLI) never import each other", () => {
    const after = ["inventory", "land", "queue", "rebase", "remove", "relaunch", "forecast", "tree", "watch", "cli"];
    const importsRoom = (room: string): RegExp => new RegExp(`from\\s+["'](?:\\.\\./)+${room}/`);
    expect(
      FILES.filter(
        ({ file, text }) => file.startsWith("src/handoff/") && after.some((room) => importsRoom(room).test(text)),
      ).map(({ file }) => file),
    ).toEqual([]);
    expect(
      FILES.filter(
        ({ file, text }) => after.some((room) => file.startsWith(`src/${room}/`)) && importsRoom("handoff").test(text),
      ).map(({ file }) => file),
    ).toEqual([]);
  });

  it("src/locks/ is a leaf: it imports only src/process/, src/fs/, src/errors.ts and src/text.ts of the package", () => {
    const rooms = roomGraph().get("src/locks/") ?? new Set<string>();
    expect(
      [...rooms].filter((room) => !["src/process/", "src/fs/", "src/errors.ts", "src/text.ts"].includes(room)),
    ).toEqual([]);
  });

  it("the shared rooms below (child, adoption, mux, process, session, manifest, git, fs, config, ports, locks) import no room above them", () => {
    const shared = [
      "child",
      "adoption",
      "mux",
      "process",
      "session",
      "manifest",
      "git",
      "fs",
      "config",
      "ports",
      "locks",
    ];
    const above =
      /from\s+["'](?:\.\.\/)+(?:handoff|inventory|land|queue|rebase|remove|relaunch|forecast|tree|watch|cli)\//;
    const offenders = FILES.filter(
      ({ file, text }) => shared.some((room) => file.startsWith(`src/${room}/`)) && above.test(text),
    ).map(({ file }) => file);
    expect(offenders).toEqual([]);
  });
});

describe("Pi's packages reach the natively loaded files as Pi's own instances", () => {
  it("every host package imported at run time is one pi-extension/index.ts hands over", async () => {
    // A value import (not `import type`) of a package Pi provides: native loading would otherwise
    // look for it in node_modules, where an installed copy has none (they are optional peers).
    const hostImport =
      /^import\s+(?!type\b)[^;]*?from\s+["'](@earendil-works\/[^"']+|@mariozechner\/[^"']+|typebox(?:\/[^"']*)?)["']/gms;
    const imported = new Set(
      FILES.filter(({ file }) => file !== "pi-extension/index.ts").flatMap(({ text }) =>
        [...text.matchAll(hostImport)].map((match) => match[1] ?? ""),
      ),
    );
    const { HOST_MODULES } = await import("../../pi-extension/index.ts");
    expect([...imported].sort()).toEqual(Object.keys(HOST_MODULES).sort());
  });
});

describe("what every Pi loads of this package before its session starts", () => {
  /** The package's own files `entry` imports statically (value imports, not `import type`), transitively. */
  function staticGraph(entry: string): Set<string> {
    const seen = new Set<string>();
    const valueImport = /^(?:import|export)\s+(?!type\b)(?:[^;]*?\sfrom\s+)?["'](\.{1,2}\/[^"']+)["']/gms;
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const match of text.matchAll(valueImport)) {
        const target = relative(ROOT, join(ROOT, file, "..", match[1] ?? ""));
        if (/\.(?:ts|mjs)$/.test(target)) visit(target);
      }
    };
    visit(entry);
    return seen;
  }

  it("the adapter's start leaves lineage adoption, delivery, reports, git and settings to the session's start", () => {
    const graph = staticGraph("pi-extension/extension.ts");
    // What the acknowledgement needs is there: a child's start must not wait for anything else.
    expect(graph).toContain("pi-extension/child-startup.ts");
    expect(graph).toContain("src/child/acknowledge.ts");
    expect(graph).toContain("src/manifest/store.ts");
    const deferred = [...graph].filter(
      (file) =>
        /^src\/(?:git|handoff|inventory|land|queue|rebase|remove|relaunch|forecast|tree|watch|cli|mux\/(?:herdr|tmux|zellij)\/)/.test(
          file,
        ) ||
        [
          "src/config/load.ts",
          "src/adoption/session.ts",
          "src/adoption/scan.ts",
          "src/adoption/delivery.ts",
          "src/adoption/reports.ts",
          "src/manifest/child-reports.ts",
          "src/manifest/handoff-notes.ts",
          "pi-extension/handoff-command.ts",
          "pi-extension/handoffs-command.ts",
        ].includes(file),
    );
    expect(deferred).toEqual([]);
  });
});
