/**
 * The parent's widget line while a merge queue of its repository runs (`queue 2/4: feat/d checking
 * 12 s (1 landed)`): read from the queues' journals (queue-journal.ts), never from git.
 *
 * Invariants:
 * - Cheap and in the background: at most one look per `minIntervalMs`, a look being one readdir of
 *   the queues' directory and one stat per journal; a journal is read and parsed only when its
 *   mtime changed. Whether its process lives is signal 0 alone (process/facts.ts `pidMayExist`).
 * - Shown only for a run not finished whose process lives and that holds one of this parent's own
 *   handoffs (those are of its repository): a run killed midway shows nothing here (`--status` says it).
 * - The time so far is computed when the line is drawn, so the widget's age tick moves it on.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { pidMayExist } from "../process/facts.ts";
import { type QueueJournal, queueJournalMtime, queueJournalPath, readQueueJournal } from "./queue-journal.ts";
import { queueProgressLine } from "./queue-words.ts";

export class QueueProgressLine {
  readonly #dir: string;
  readonly #onChange: () => void;
  readonly #minIntervalMs: number;
  readonly #alive: (pid: number) => boolean;
  readonly #read = new Map<string, { mtimeMs: number; journal: QueueJournal }>();
  #lookedAt = Number.NEGATIVE_INFINITY;
  #looking = false;

  constructor(input: {
    agentDir: string;
    onChange: () => void;
    minIntervalMs?: number;
    /** Whether the run's process lives; signal 0 by default. */
    alive?: (pid: number) => boolean;
  }) {
    this.#dir = join(queueJournalPath(input.agentDir, "x"), "..");
    this.#onChange = input.onChange;
    this.#minIntervalMs = input.minIntervalMs ?? 1_000;
    this.#alive = input.alive ?? pidMayExist;
  }

  /** The line for a queue holding one of `ownIds` that runs now, as last read; starts a look when one is due. */
  line(ownIds: ReadonlySet<string>, now: number): string | undefined {
    if (!this.#looking && now - this.#lookedAt >= this.#minIntervalMs) {
      this.#looking = true;
      this.#lookedAt = now;
      void this.#look().finally(() => {
        this.#looking = false;
      });
    }
    for (const { journal } of this.#read.values()) {
      if (journal.finishedAt !== undefined || !this.#alive(journal.pid)) continue;
      if (!journal.members.some((member) => ownIds.has(member.id))) continue;
      return queueProgressLine(journal, now);
    }
    return undefined;
  }

  async #look(): Promise<void> {
    let names: string[];
    try {
      names = (await readdir(this.#dir)).filter((name) => name.endsWith(".json") && !name.startsWith("."));
    } catch {
      // No queue has run yet (no directory), or it cannot be read now: nothing to show.
      names = [];
    }
    let changed = false;
    for (const path of [...this.#read.keys()])
      if (!names.includes(path.slice(this.#dir.length + 1))) {
        this.#read.delete(path);
        changed = true;
      }
    for (const name of names) {
      const path = join(this.#dir, name);
      const mtimeMs = await queueJournalMtime(path);
      if (mtimeMs === undefined || this.#read.get(path)?.mtimeMs === mtimeMs) continue;
      const read = await readQueueJournal(path);
      if (read.code !== "found") continue;
      this.#read.set(path, { mtimeMs: read.mtimeMs, journal: read.journal });
      changed = true;
    }
    if (changed) this.#onChange();
  }
}
