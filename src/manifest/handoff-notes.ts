/**
 * Notes for a handoff child from outside its conversation (`pi-handoff rebase`: its base moved;
 * `pi-handoff land --all`: the queue sent it back, with why):
 * small files in the handoff store, one per note, under
 * `<agentDir>/handoff-worktree/notes/<handoff id>/<note id>.json`. The reverse of the child's
 * reports (child-reports.ts): recovery writes here, the child's own Pi delivers each note once.
 *
 * Invariants:
 * - Nothing but the child's own Pi ever writes the child's session: recovery writes a file here,
 *   and the child's Pi turns it into one message at an idle point (adoption/notes.ts).
 * - This zod schema is the only definition of the format; a file that fails it is skipped (and
 *   counted), never repaired or deleted.
 * - Files are written atomically and never overwritten; a note's id comes from what it tells (the
 *   rebase's time and new tip; the queue run's time and the branch's tip), so telling again after
 *   a crash writes nothing.
 * - The text is cleaned and bounded before it is written; reads are bounded (`MAX_LISTED`).
 */
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { errorCode } from "../fs/probe.ts";
import { boundText, sanitizeText } from "../session/redact.ts";

export const HANDOFF_NOTE_VERSION = 1;
export const MAX_NOTE_TEXT_CHARS = 4_000;
const MAX_LISTED = 200;
const NOTE_ID = /^\d{13}-[0-9a-f]{8}$/;
const HANDOFF_ID = /^[a-z0-9][a-z0-9-]{2,80}$/;
const isoTime = z.string().datetime({ offset: true });
const sha = z.string().regex(/^[0-9a-f]{40,64}$/);

const noteCommon = {
  version: z.literal(HANDOFF_NOTE_VERSION),
  id: z.string().regex(NOTE_ID),
  handoffId: z.string().regex(HANDOFF_ID),
  createdAt: isoTime,
  branch: z.string(),
  text: z.string().max(MAX_NOTE_TEXT_CHARS),
};

/** Why the queue (`pi-handoff land --all`) sent a child back. */
export const SENT_BACK_REASONS = ["conflict", "check_failed", "refused"] as const;

export const HandoffNoteSchema = z.discriminatedUnion("kind", [
  /** `rebased`: `pi-handoff rebase` re-made the branch's commits on the target's new tip. */
  z.strictObject({
    ...noteCommon,
    kind: z.literal("rebased"),
    rebase: z.strictObject({
      onto: z.strictObject({ ref: z.string(), sha }),
      from: sha,
      to: sha,
      commits: z.number().int().nonnegative(),
    }),
  }),
  /** `sent_back`: the queue did not land the branch; it is at `tip` (as before the queue, unless kept rebased). */
  z.strictObject({
    ...noteCommon,
    kind: z.literal("sent_back"),
    sentBack: z.strictObject({
      reason: z.enum(SENT_BACK_REASONS),
      into: z.string(),
      tip: sha,
      log: z.string().optional(),
    }),
  }),
]);
export type HandoffNote = z.infer<typeof HandoffNoteSchema>;

type NoteFacts =
  | { kind: "rebased"; rebase: Extract<HandoffNote, { kind: "rebased" }>["rebase"] }
  | { kind: "sent_back"; sentBack: Extract<HandoffNote, { kind: "sent_back" }>["sentBack"] };

export type HandoffNoteInput = NoteFacts & {
  handoffId: string;
  branch: string;
  text: string;
  /** The note's id: the time in ms and 8 hex digits of what it tells; written at most once. */
  fixedId: { at: Date; hex: string };
};

export class HandoffNoteStore {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  static forAgentDir(agentDir: string): HandoffNoteStore {
    return new HandoffNoteStore(join(agentDir, "handoff-worktree", "notes"));
  }

  /** Writes the note once; `written: false` when it is there already (told before a crash). */
  async write(input: HandoffNoteInput, now: Date = new Date()): Promise<HandoffNote & { written: boolean }> {
    if (!HANDOFF_ID.test(input.handoffId)) throw new Error(`${JSON.stringify(input.handoffId)} is not a handoff id.`);
    const note = HandoffNoteSchema.parse({
      version: HANDOFF_NOTE_VERSION,
      id: `${String(input.fixedId.at.getTime()).padStart(13, "0")}-${input.fixedId.hex.slice(0, 8)}`,
      handoffId: input.handoffId,
      createdAt: now.toISOString(),
      branch: input.branch,
      text: boundText(sanitizeText(input.text).trim(), MAX_NOTE_TEXT_CHARS).text,
      ...(input.kind === "rebased"
        ? { kind: input.kind, rebase: input.rebase }
        : { kind: input.kind, sentBack: input.sentBack }),
    });
    const dir = join(this.dir, note.handoffId);
    await mkdir(dir, { recursive: true });
    try {
      await writeFileAtomic(join(dir, `${note.id}.json`), `${JSON.stringify(note, null, 2)}\n`, { overwrite: false });
    } catch (error) {
      if (errorCode(error) === "EEXIST") return { ...note, written: false };
      throw error;
    }
    return { ...note, written: true };
  }

  /** The notes of one handoff, oldest first; files whose note id `options.skip` names are not read. */
  async list(
    handoffId: string,
    options: { skip?: (noteId: string) => boolean } = {},
  ): Promise<{ notes: HandoffNote[]; skipped: number }> {
    if (!HANDOFF_ID.test(handoffId)) return { notes: [], skipped: 0 };
    const dir = join(this.dir, handoffId);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return { notes: [], skipped: 0 };
      throw error;
    }
    const files = names
      .filter(
        (name) =>
          name.endsWith(".json") && NOTE_ID.test(name.slice(0, -5)) && options.skip?.(name.slice(0, -5)) !== true,
      )
      .sort()
      .slice(-MAX_LISTED);
    const notes: HandoffNote[] = [];
    let skipped = 0;
    for (const name of files) {
      try {
        const parsed = HandoffNoteSchema.safeParse(JSON.parse(await readFile(join(dir, name), "utf8")));
        if (parsed.success && parsed.data.handoffId === handoffId && `${parsed.data.id}.json` === name)
          notes.push(parsed.data);
        else skipped += 1;
      } catch {
        skipped += 1;
      }
    }
    return { notes, skipped };
  }
}
