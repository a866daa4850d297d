/**
 * Where a handoff's tmux window is: the server's socket (`$TMUX`'s first field), the session, the
 * window and its pane, as tmux prints their ids (`$3`, `@5`, `%7`), and which server made them
 * (`server`: its pid and start time, `<pid>:<start>`). A tmux server started again on the same
 * socket (after a reboot, or `kill-server`) numbers its panes from `%0` again: without `server`,
 * another window's pane would be taken for the handoff's.
 */
import type { z } from "zod";
import { locationSchema } from "../location.ts";

export const TmuxLocationSchema = locationSchema("tmux", "socketPath", "sessionId", "windowId", "paneId", "server");
export type TmuxLocation = z.infer<typeof TmuxLocationSchema>;
