/**
 * Reports from a child to its parent: the store (src/manifest/child-reports.ts) redacts and bounds
 * what it writes, never overwrites, writes a fixed-id notice at most once and skips files that fail
 * the schema; the message the parent reads and the selection of what is not delivered yet
 * (src/adoption/reports.ts).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ChildReportStore, MAX_REPORT_TEXT_CHARS } from "../../src/manifest/child-reports.ts";
import { tripleKey } from "../../src/adoption/delivery.ts";
import { reportMessage, reportTriple, undeliveredReports } from "../../src/adoption/reports.ts";

const dir = mkdtempSync(join(tmpdir(), "phw-reports-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sha = (c: string) => c.repeat(40);
const base = { handoffId: "feat-x-1234", branch: "feat/x", parentSessionFile: "/p.jsonl" };

describe("ChildReportStore", () => {
  it("redacts secrets, drops control characters and bounds the text before writing", async () => {
    const store = new ChildReportStore(join(dir, "a"));
    const written = await store.write(
      {
        ...base,
        kind: "report",
        text: `done \u001b[31mred\u001b[0m with token ghp_${"a".repeat(36)} ${"x".repeat(5000)}`,
        commits: [],
      },
      new Date("2026-01-01T00:00:00Z"),
    );
    expect(written.written).toBe(true);
    expect(written.text.length).toBe(MAX_REPORT_TEXT_CHARS);
    expect(written.text.startsWith("done red with token ")).toBe(true);
    expect(written.text).not.toContain("ghp_aaaa");
    expect(Object.values(written.redactions).reduce((a, b) => a + b, 0)).toBe(1);
    const files = readdirSync(join(dir, "a", base.handoffId));
    expect(files).toEqual([`${written.id}.json`]);
    expect(JSON.parse(readFileSync(join(dir, "a", base.handoffId, files[0] ?? ""), "utf8"))).toMatchObject({
      id: written.id,
      kind: "report",
    });
  });

  it("writes a fixed-id notice at most once, and lists reports oldest first, skipping broken files", async () => {
    const store = new ChildReportStore(join(dir, "b"));
    const at = new Date("2026-01-01T00:00:01Z");
    const landing = { into: "main", strategy: "ff", result: sha("b") };
    const first = await store.write({
      ...base,
      kind: "landed",
      text: "landed",
      commits: [{ sha: sha("b"), subject: "s" }],
      landing,
      fixedId: { at, hex: sha("b") },
    });
    const again = await store.write({
      ...base,
      kind: "landed",
      text: "landed again",
      commits: [],
      landing,
      fixedId: { at, hex: sha("b") },
    });
    expect([first.written, again.written, again.id]).toEqual([true, false, first.id]);
    const earlier = await store.write(
      { ...base, kind: "report", text: "earlier", commits: [] },
      new Date("2026-01-01T00:00:00Z"),
    );
    writeFileSync(join(dir, "b", base.handoffId, "1767225600500-deadbeef.json"), "{ not json");
    const listed = await store.list(base.handoffId);
    expect(listed.reports.map((report) => [report.id, report.text])).toEqual([
      [earlier.id, "earlier"],
      [first.id, "landed"],
    ]);
    expect(listed.skipped).toBe(1);
    expect(await store.list("../escape")).toEqual({ reports: [], skipped: 0 });
  });
});

describe("ChildReportStore.handoffsWithReports", () => {
  it("names only the handoffs that sent something, and none while nothing ever was", async () => {
    const store = new ChildReportStore(join(dir, "who"));
    expect(await store.handoffsWithReports()).toEqual(new Set());
    await store.write({ ...base, kind: "report", text: "done", commits: [] });
    writeFileSync(join(dir, "who", "not a handoff id"), "");
    expect(await store.handoffsWithReports()).toEqual(new Set([base.handoffId]));
  });
});

describe("report messages and selection", () => {
  it("names the handoff, the text and the commits, and selects only what is not known", async () => {
    const store = new ChildReportStore(join(dir, "c"));
    const report = await store.write(
      {
        ...base,
        kind: "report",
        text: "did it",
        left: "docs",
        commits: [
          { sha: sha("a"), subject: "first" },
          { sha: sha("b"), subject: "second" },
        ],
        commitsTotal: 3,
      },
      new Date("2026-01-01T00:00:00Z"),
    );
    const message = reportMessage(report);
    expect(message.content).toBe(
      [
        "Report from handoff feat/x (feat-x-1234), sent 2026-01-01T00:00:00.000Z:",
        "did it",
        "Left: docs",
        "Commits on feat/x (3):",
        `- ${sha("a").slice(0, 12)} first`,
        `- ${sha("b").slice(0, 12)} second`,
        "- ... and 1 more",
      ].join("\n"),
    );
    expect(message).toMatchObject({
      customType: "handoff-worktree-report",
      display: true,
      details: { reportId: report.id, kind: "report", commits: [sha("a"), sha("b")] },
    });
    const known = new Set<string>();
    expect(
      (await undeliveredReports(store, [base.handoffId], (t) => known.has(tripleKey(t)))).map((r) => r.id),
    ).toEqual([report.id]);
    known.add(tripleKey(reportTriple(report)));
    expect(await undeliveredReports(store, [base.handoffId], (t) => known.has(tripleKey(t)))).toEqual([]);
  });
});
