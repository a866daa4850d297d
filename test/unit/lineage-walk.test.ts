/**
 * The lineage walk over session headers: order, fork times, and every way a chain can be broken
 * (missing file, invalid header, cycle, bare ids, too deep), each ending the walk with a note.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ancestorKeys, MAX_LINEAGE_DEPTH, walkLineage } from "../../src/adoption/ancestry.ts";
import { makeTempDir, removeTempDir } from "../support/git-repo.ts";

let dir: string;

beforeEach(() => {
  dir = makeTempDir("phw-walk-");
  mkdirSync(join(dir, "s"));
});
afterEach(() => removeTempDir(dir));

/** A session file with only a header (the walk reads nothing else), plus a body line it must not need. */
function session(name: string, id: string, minute: number, parentSession?: string): string {
  const file = join(dir, "s", `2026-01-01T00-${String(minute).padStart(2, "0")}-00-000Z_${id}.jsonl`);
  const header = {
    type: "session",
    version: 3,
    id,
    timestamp: `2026-01-01T00:${String(minute).padStart(2, "0")}:00.000Z`,
    cwd: `/work/${name}`,
    ...(parentSession === undefined ? {} : { parentSession }),
  };
  writeFileSync(file, `${JSON.stringify(header)}\n{"type":"message","id":"x"}\n`);
  return file;
}

const at = (minute: number) => Date.parse(`2026-01-01T00:${String(minute).padStart(2, "0")}:00.000Z`);

describe("walkLineage", () => {
  it("follows parentSession up the chain, nearest first, with the time each was forked from", () => {
    const a = session("a", "id-a", 1);
    const b = session("b", "id-b", 2, a);
    const lineage = walkLineage({
      sessionFile: join(dir, "s", "c.jsonl"),
      sessionId: "id-c",
      parentSession: b,
      timestamp: "2026-01-01T00:03:00.000Z",
    });
    expect(lineage.ancestors).toEqual([
      {
        depth: 1,
        ref: b,
        forkedAt: at(3),
        sessionFile: b,
        sessionId: "id-b",
        createdAt: at(2),
        cwd: "/work/b",
        found: "file",
      },
      {
        depth: 2,
        ref: a,
        forkedAt: at(2),
        sessionFile: a,
        sessionId: "id-a",
        createdAt: at(1),
        cwd: "/work/a",
        found: "file",
      },
    ]);
    expect(lineage.notes).toEqual([]);
  });

  it("has no ancestors for a session without a parent", () => {
    expect(walkLineage({ sessionId: "id-x" })).toEqual({
      current: { sessionId: "id-x", sessionFile: undefined, createdAt: undefined, cwd: undefined },
      ancestors: [],
      notes: [],
    });
  });

  it("keeps a missing parent (its runs are still its runs) and stops there", () => {
    const gone = join(dir, "s", "gone.jsonl");
    const lineage = walkLineage({ sessionId: "id-c", parentSession: gone });
    expect(lineage.ancestors).toEqual([
      { depth: 1, ref: gone, forkedAt: undefined, sessionFile: gone, found: "missing" },
    ]);
    expect(lineage.notes).toEqual([`Ancestor session ${gone} is missing; the walk stopped there.`]);
  });

  it("stops at a file without a valid header", () => {
    const bad = join(dir, "s", "bad.jsonl");
    writeFileSync(bad, "not json\n");
    const lineage = walkLineage({ sessionId: "id-c", parentSession: bad });
    expect(lineage.ancestors.map((a) => a.found)).toEqual(["invalid"]);
    expect(lineage.notes).toEqual([`The session file ${bad} does not start with a JSON header.`]);
  });

  it("resolves a bare session id beside the session that names it, and keeps an unknown one as an id", () => {
    const a = session("a", "id-a", 1);
    const b = session("b", "id-b", 2, "id-a");
    const found = walkLineage({ sessionFile: b, sessionId: "id-b", parentSession: "id-a" });
    expect(found.ancestors.map((x) => [x.ref, x.sessionFile, x.sessionId, x.found])).toEqual([
      ["id-a", a, "id-a", "file"],
    ]);
    expect(ancestorKeys(found.ancestors[0] ?? { depth: 1, ref: "", found: "file" })).toEqual(["id-a", a]);

    const unknown = walkLineage({ sessionFile: b, sessionId: "id-b", parentSession: "id-nowhere" });
    expect(unknown.ancestors).toEqual([
      { depth: 1, ref: "id-nowhere", forkedAt: undefined, sessionId: "id-nowhere", found: "id-only" },
    ]);
    expect(unknown.notes).toEqual([
      "Ancestor id-nowhere is known only by its session id; its own ancestors were not followed.",
    ]);
  });

  it("stops at a cycle instead of looping", () => {
    const aFile = join(dir, "s", "2026-01-01T00-01-00-000Z_id-a.jsonl");
    const b = session("b", "id-b", 2, aFile);
    session("a", "id-a", 1, b);
    const lineage = walkLineage({ sessionFile: join(dir, "s", "c.jsonl"), sessionId: "id-c", parentSession: b });
    expect(lineage.ancestors.map((x) => x.sessionId)).toEqual(["id-b", "id-a"]);
    expect(lineage.notes).toEqual([`The lineage loops back to ${b}; the walk stopped there.`]);
  });

  it("stops at a session that names the current one", () => {
    const current = join(dir, "s", "2026-01-01T00-05-00-000Z_id-c.jsonl");
    const parent = session("p", "id-p", 4, current);
    const lineage = walkLineage({ sessionFile: current, sessionId: "id-c", parentSession: parent });
    expect(lineage.ancestors.map((x) => x.sessionId)).toEqual(["id-p"]);
    expect(lineage.notes).toEqual([`The lineage loops back to ${current}; the walk stopped there.`]);
  });

  it(`reads at most ${MAX_LINEAGE_DEPTH} ancestors`, () => {
    let parent: string | undefined;
    for (let i = 0; i < 12; i += 1) parent = session(`s${i}`, `id-${i}`, i, parent);
    const lineage = walkLineage({ sessionId: "id-leaf", parentSession: parent });
    expect(lineage.ancestors.map((x) => x.sessionId)).toEqual([
      "id-11",
      "id-10",
      "id-9",
      "id-8",
      "id-7",
      "id-6",
      "id-5",
      "id-4",
    ]);
    expect(lineage.notes).toEqual([
      `The lineage is deeper than ${MAX_LINEAGE_DEPTH} sessions; older ancestors were not looked at.`,
    ]);
  });
});
