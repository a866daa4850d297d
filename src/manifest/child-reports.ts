/**
 * Reports from a handoff child to its parent (`handoff_report`, `/handoff-report`) and the notice a
 * landing sends: small files in the handoff store, one per report, under
 * `<agentDir>/handoff-worktree/reports/<handoff id>/<report id>.json`.
 *
 * Invariants:
 * - The child never writes the parent's session: it writes a file here, and the parent's own Pi
 *   delivers it (adoption/delivery.ts), so each session keeps exactly one writer.
 * - This zod schema is the only definition of the format; a file that fails it is skipped (and
 *   counted), never repaired or deleted.
 * - Files are written atomically (temp, fsync, link into place) and never overwritten: a report id
 *   is its creation time plus random bytes, so two reports never collide and the order is the name's.
 * - The text is bounded and redacted before it is written (as the handoff message is).
 * - Reads are bounded: a directory per handoff, at most `MAX_LISTED` reports read per handoff.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode } from "../fs/probe.ts";
import { boundText, redactSecrets, sanitizeText } from "../session/redact.ts";

export const CHILD_REPORT_VERSION = 1;
export const MAX_REPORT_TEXT_CHARS = 4_000;
export const MAX_REPORT_COMMITS = 50;
const MAX_LISTED = 200;
const REPORT_ID = /^\d{13}-[0-9a-f]{8}$/;
const HANDOFF_ID = /^[a-z0-9][a-z0-9-]{2,80}$/;
const isoTime = z.string().datetime({ offset: true });
const sha = z.string().regex(/^[0-9a-f]{40,64}$/);

export const ChildReportSchema = z.strictObject({
  version: z.literal(CHILD_REPORT_VERSION),
  id: z.string().regex(REPORT_ID),
  handoffId: z.string().regex(HANDOFF_ID),
  /** `report`: the child's own words; `landed`: `pi-handoff land` brought its commits into `into`. */
  kind: z.enum(["report", "landed"]),
  createdAt: isoTime,
  branch: z.string(),
  /** Whom it is for: the parent session recorded in the manifest. */
  parentSessionFile: z.string(),
  text: z.string().max(MAX_REPORT_TEXT_CHARS),
  done: z.string().max(MAX_REPORT_TEXT_CHARS).optional(),
  left: z.string().max(MAX_REPORT_TEXT_CHARS).optional(),
  commits: z.array(z.strictObject({ sha, subject: z.string() })).max(MAX_REPORT_COMMITS),
  commitsTotal: z.number().int().nonnegative(),
  /** For `landed`: the target branch, the strategy and the commit it now points at. */
  landing: z.strictObject({ into: z.string(), strategy: z.string(), result: sha }).optional(),
  /** How many secrets were redacted, by kind. */
  redactions: z.record(z.string(), z.number()),
});
export type ChildReport = z.infer<typeof ChildReportSchema>;

export interface ChildReportInput {
  handoffId: string;
  kind: ChildReport["kind"];
  branch: string;
  parentSessionFile: string;
  text: string;
  done?: string;
  left?: string;
  commits: readonly { sha: string; subject: string }[];
  commitsTotal?: number;
  landing?: ChildReport["landing"];
  /**
   * A fixed id (time in ms, 8 hex digits) for a report that must exist at most once, such as the
   * notice of one landing: writing it again finds the file there and writes nothing (`written: false`).
   */
  fixedId?: { at: Date; hex: string };
}

/** The id of a report written with `fixedId`: known before it is written (a landing's notice). */
export function fixedReportId(fixedId: { at: Date; hex: string }): string {
  return `${String(fixedId.at.getTime()).padStart(13, "0")}-${fixedId.hex.slice(0, 8)}`;
}

/** Cleans a report's text: control characters dropped, secrets redacted, size bounded. */
function prepare(text: string, redactions: Record<string, number>): string {
  const { text: redacted, redacted: counts } = redactSecrets(sanitizeText(text).trim());
  for (const [kind, count] of Object.entries(counts)) redactions[kind] = (redactions[kind] ?? 0) + count;
  const bounded = boundText(redacted, MAX_REPORT_TEXT_CHARS);
  return bounded.text;
}

export class ChildReportStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  static forAgentDir(agentDir: string): ChildReportStore {
    return new ChildReportStore(join(agentDir, "handoff-worktree", "reports"));
  }

  /** Writes a new report (cleaned and bounded); returns it as written, `written: false` when a fixed id existed. */
  async write(input: ChildReportInput, now: Date = new Date()): Promise<ChildReport & { written: boolean }> {
    if (!HANDOFF_ID.test(input.handoffId)) throw new Error(`${JSON.stringify(input.handoffId)} is not a handoff id.`);
    const redactions: Record<string, number> = {};
    const report: ChildReport = ChildReportSchema.parse({
      version: CHILD_REPORT_VERSION,
      id:
        input.fixedId === undefined
          ? `${String(now.getTime()).padStart(13, "0")}-${randomBytes(4).toString("hex")}`
          : fixedReportId(input.fixedId),
      handoffId: input.handoffId,
      kind: input.kind,
      createdAt: now.toISOString(),
      branch: input.branch,
      parentSessionFile: input.parentSessionFile,
      text: prepare(input.text, redactions),
      ...(input.done === undefined ? {} : { done: prepare(input.done, redactions) }),
      ...(input.left === undefined ? {} : { left: prepare(input.left, redactions) }),
      commits: input.commits
        .slice(0, MAX_REPORT_COMMITS)
        .map((commit) => ({ sha: commit.sha, subject: prepare(commit.subject, redactions).slice(0, 200) })),
      commitsTotal: input.commitsTotal ?? input.commits.length,
      ...(input.landing === undefined ? {} : { landing: input.landing }),
      redactions,
    });
    const dir = join(this.dir, report.handoffId);
    await mkdir(dir, { recursive: true });
    try {
      await writeFileAtomic(join(dir, `${report.id}.json`), `${JSON.stringify(report, null, 2)}\n`, {
        overwrite: false,
      });
    } catch (error) {
      if (input.fixedId !== undefined && errorCode(error) === "EEXIST") return { ...report, written: false };
      throw error;
    }
    return { ...report, written: true };
  }

  /** The handoffs that have sent reports (one directory listing; none when nothing was ever sent). */
  async handoffsWithReports(): Promise<Set<string>> {
    try {
      return new Set((await readdir(this.dir)).filter((name) => HANDOFF_ID.test(name)));
    } catch (error) {
      if (errorCode(error) === "ENOENT") return new Set();
      throw error;
    }
  }

  /**
   * The reports of one handoff, oldest first; unreadable files are counted in `skipped`, and files
   * whose report id `options.skip` names are not read at all.
   */
  async list(
    handoffId: string,
    options: { skip?: (reportId: string) => boolean } = {},
  ): Promise<{ reports: ChildReport[]; skipped: number }> {
    if (!HANDOFF_ID.test(handoffId)) return { reports: [], skipped: 0 };
    const dir = join(this.dir, handoffId);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return { reports: [], skipped: 0 };
      throw error;
    }
    const files = names
      .filter(
        (name) =>
          name.endsWith(".json") && REPORT_ID.test(name.slice(0, -5)) && options.skip?.(name.slice(0, -5)) !== true,
      )
      .sort()
      .slice(-MAX_LISTED);
    const reports: ChildReport[] = [];
    let skipped = 0;
    for (const name of files) {
      try {
        const parsed = ChildReportSchema.safeParse(JSON.parse(await readFile(join(dir, name), "utf8")));
        if (parsed.success && parsed.data.handoffId === handoffId && `${parsed.data.id}.json` === name)
          reports.push(parsed.data);
        else skipped += 1;
      } catch {
        skipped += 1;
      }
    }
    return { reports, skipped };
  }
}
