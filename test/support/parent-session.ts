/**
 * The parent conversation a handoff starts from, made once for every rig: a real two-message
 * session written by Pi's SessionManager, in the session dir the caller names (usually Pi's
 * default dir for the repository).
 */
import { readFileSync } from "node:fs";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { assistantMessage, userMessage } from "./lineage.ts";

export interface ParentConversation {
  sessionFile: string;
  sessionId: string;
  /** The last entry: the active leaf the handoff forks at. */
  leafId: string;
  sessionDir: string;
  cwd: string;
}

export function createParentConversation(
  cwd: string,
  sessionDir: string,
  texts: { question: string; answer: string } = {
    question: "what is in this repository?",
    answer: "a README and one file",
  },
): ParentConversation {
  const manager = SessionManager.create(cwd, sessionDir);
  manager.appendMessage(userMessage(texts.question));
  const leafId = manager.appendMessage(assistantMessage(texts.answer));
  const sessionFile = manager.getSessionFile() ?? "";
  readFileSync(sessionFile); // on disk, or this throws
  return { sessionFile, sessionId: manager.getSessionId(), leafId, sessionDir, cwd };
}
