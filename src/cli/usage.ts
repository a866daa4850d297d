/**
 * The `pi-handoff --help` text: every command, its options and what it does.
 *
 * Invariants:
 * - One text for the shell (`pi-handoff --help`) and for `/handoffs help` (which drops its first lines).
 */

export const USAGE = `Usage: pi-handoff <command> [options]

Find, restart and clean up the handoffs /handoff-worktree made (their manifests live in
<agent dir>/handoff-worktree/manifests; agent dir: $PI_CODING_AGENT_DIR, else ~/.pi/agent).
A <handoff> is its id, a unique start of its id, or its branch.

Commands:
  list [--repo DIR] [--all] [--json]      every handoff, judged against what really exists
  inspect <handoff> [--json]              one handoff in detail, its reserved ports tested
  env <handoff> [--json]                  its ports and variables as export lines:
                                          eval "$(pi-handoff env <handoff>)" in your own shell
  focus <handoff>                         switch to its window (tmux) or workspace (Herdr)
  relaunch <handoff> [--no-focus]         start its Pi again (never while one runs on its session),
                                          reopening its window if it was closed
  relaunch --all [--repo DIR | --all-repos]
                                          the same for every handoff of this repository (or of
                                          DIR's, or of every repository) whose Pi is gone, after
                                          a reboot: one line each (restored, already running,
                                          refused and why); exit 1 if any was not restored
  remove <handoff> [--force] [--delete-branch] [--dry-run]
                                          close its window and delete its worktree; refuses
                                          uncommitted files, unmerged commits, or a worktree it
                                          cannot check for a running Pi unless --force,
                                          listing them first; the branch is kept unless
                                          --delete-branch and it is merged; --dry-run only
                                          says what would be done
  forecast [--repo DIR] [--json]          for every live handoff: the files that would conflict
                                          landing it into its target now, and between it and each
                                          sibling (same repository and target), and how far the
                                          target moved past it; merges in git's object store only
  rebase <handoff> [--dry-run] [--no-verify]
                                          re-make the branch's commits on the tip of the branch it
                                          lands into, when that moved on: objects first, then the
                                          branch moved once, its worktree with it; refuses
                                          (changing nothing) while its Pi is in a turn, on
                                          uncommitted changes in the worktree and on conflicts;
                                          its Pi is told at its next idle point
  tree [<handoff> | <session file>] [--repo DIR] [--json]
                                          the handoff tree: each conversation that handed off
                                          (this repository's, or DIR's; or from one handoff or
                                          session), its handoffs under it, theirs under them;
                                          each with its state as list says it, commits ahead and
                                          behind, landed or not, the tokens and cost its session
                                          added itself (after its fork point) and its runs', and
                                          its whole subtree's total
  prune [--dry-run] [--merged]            drop only what loses nothing: git's entries for its own
                                          vanished worktrees, handoffs whose worktree is gone and
                                          whose branch is merged or gone, handoffs that failed
                                          early; --merged also retires every handoff whose branch
                                          is merged (landed, rebased, squashed) and deletes the
                                          branches it created, listing each first
  land <handoff> [--into BRANCH] [--strategy ff|rebase|merge|squash] [--message SUBJECT]
       [--dry-run] [--remove] [--delete-branch] [--no-verify]
                                          bring the branch's commits into the branch the handoff
                                          started from (or --into); fast-forward by default, else
                                          name a strategy; refuses (changing nothing) while its Pi
                                          is in a turn, on uncommitted changes in the worktree or
                                          in the target's files (ignored ones too), on conflicts,
                                          while the target is being rebased, and when a merge,
                                          squash or rebase would bypass the repository's commit
                                          hooks (unless --no-verify); -m/--message sets the
                                          subject of a merge or squash commit; --dry-run says
                                          what it would do; --remove then removes the worktree
                                          (branch kept unless --delete-branch)
  land --all [--repo DIR] | land <handoff> <handoff>... [--dry-run] [--keep-rebased]
       [--approve-repo-code] [--no-verify]
                                          the merge queue: every ready child of the repository
                                          (or these), in an order from the forecast, each rebased
                                          onto its target's tip in its worktree, checked there
                                          (settings: check) and fast-forwarded; one that
                                          conflicts or fails its check is sent back as it was
                                          (--keep-rebased: rebased) and told why; exit 1 when
                                          one was sent back; --dry-run prints the order, the
                                          strategy and the check; a repository's check runs only
                                          once approved (--approve-repo-code); a run stopped
                                          before it finished (killed) is taken up by the next
  land --all --status [--repo DIR] [--json]
                                          the repository's current or last queue run: whether it
                                          runs now, each child's step or outcome, and for a run
                                          stopped midway, what git's refs say of each child

  completion bash|zsh|fish                print a completion script for that shell; load it with
                                          source <(pi-handoff completion bash) (zsh: the same, after
                                          compinit; fish: pi-handoff completion fish | source)

Options: --help, --version.
Exit status: 0 done, 1 refused or failed (the reason is on stderr), 2 bad input.`;
