/**
 * The event a running `/handoff-worktree` emits on Pi's event bus at each step, so the parent's
 * widget looks at the store at once (parent-watch.ts). Its own module: the watch starts with every
 * Pi, the command's modules load only when a handoff runs.
 */
export const HANDOFF_PROGRESS_CHANNEL = "handoff-worktree:progress";
