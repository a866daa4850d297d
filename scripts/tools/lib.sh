# Shared by the scripts that build the real terminals the tests drive (herdr.sh, zellij.sh).
#
# Invariants:
# - A built binary lives outside the checkout, in the tools cache, under a folder named by a key
#   of everything that decides its bytes (sources' checksums, versions, the recipe); a new key is
#   a new folder, so a stale binary is never reused and a good one is never rebuilt.
# - A binary is moved into place only whole and only after it answered `--version`: a killed build
#   leaves no half binary that a later run would trust.
# - One build per key at a time (flock); a second caller waits for the first and reuses its result.
# - Nothing here reads or writes the user's ~/.config, ~/.herdr or ~/.pi.

tools_cache_dir() {
  printf '%s\n' "${PI_HANDOFF_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pi-handoff-worktree/tools}"
}

# The first 16 hex digits of the sha256 of everything given on stdin.
tools_key() {
  sha256sum | cut -c1-16
}

tools_log() {
  printf '%s: %s\n' "$TOOL_NAME" "$*" >&2
}

tools_die() {
  tools_log "$*"
  exit 1
}

# tools_usage NAME: the common flags.
tools_usage() {
  cat >&2 <<EOF
usage: $1 [--locate]
  (no flag)  print the path of the built binary, building it first when the cache has none
  --locate   print the path only when it is already built; exit 3 when it is not
EOF
}

# tools_publish BUILT FINAL: moves a checked binary into place atomically.
tools_publish() {
  local built="$1" final="$2"
  mkdir -p "$(dirname "$final")"
  cp "$built" "$final.partial"
  chmod 755 "$final.partial"
  "$final.partial" --version >/dev/null 2>&1 || tools_die "the built binary does not answer --version: $built"
  mv -f "$final.partial" "$final"
}
