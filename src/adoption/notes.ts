/**
 * Notes into a handoff child (manifest/handoff-notes.ts): `pi-handoff rebase` tells the child its
 * base moved; the child's own Pi delivers each note once, at an idle point, through the delivery
 * rules reports use the other way (delivery.ts).
 *
 * Invariants:
 * - Recovery writes only the note store, never the child's session; the child's Pi turns each
 *   note into one message, and its ledger key `(handoff-note, note id, delivered)` keeps it from
 *   being delivered twice, across restarts.
 * - Pure apart from the store's reads.
 */
import { NOTE_MESSAGE_TYPE } from "../session/message-types.ts";
import type { HandoffNote, HandoffNoteStore } from "../manifest/handoff-notes.ts";
import type { DeliveredTriple } from "./ledger.ts";
import type { DeliveryMessage } from "./delivery.ts";

export const NOTE_SOURCE = "handoff-note";

/** The ledger key of a note's delivery. */
export function noteTriple(note: Pick<HandoffNote, "id">): DeliveredTriple {
  return { source: NOTE_SOURCE, runId: note.id, outcome: "delivered" };
}

/** The message the child's model and person read. */
export function noteMessage(note: HandoffNote): DeliveryMessage {
  return {
    customType: NOTE_MESSAGE_TYPE,
    content: note.text,
    display: true,
    details: {
      handoffId: note.handoffId,
      noteId: note.id,
      ...(note.kind === "rebased"
        ? { kind: note.kind, rebase: note.rebase }
        : { kind: note.kind, sentBack: note.sentBack }),
    },
  };
}

/** Notes of this handoff not yet delivered or queued (`known`), oldest first. */
export async function undeliveredNotes(
  notes: HandoffNoteStore,
  handoffId: string,
  known: (triple: DeliveredTriple) => boolean,
): Promise<HandoffNote[]> {
  const listed = await notes.list(handoffId, { skip: (noteId) => known(noteTriple({ id: noteId })) });
  return listed.notes;
}
