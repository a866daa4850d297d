#!/usr/bin/env bash
# Prints the path of the real zellij the tests drive, installed from crates.io once per machine
# (cargo install --locked) into the tools cache (scripts/tools/lib.sh) outside the checkout.
#
# Invariants:
# - One pinned version, its own Cargo.lock (--locked), the features named here; the cache key is all
#   of them plus this recipe, so a cached binary is exactly what this script would build.
# - Features: the built-in plugins (plugins_from_target) and nothing that reaches the network at run
#   time or serves the web client (vendored_curl, web_server_capability are off): the terminal
#   multiplexer the tests need, a shorter build on two cores.
set -euo pipefail
TOOL_NAME=zellij.sh
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"

ZELLIJ_VERSION=0.45.1
FEATURES=plugins_from_target
RECIPE=1

mode=build
case "${1:-}" in
  "") ;;
  --locate) mode=locate ;;
  -h | --help) tools_usage "$0"; exit 0 ;;
  *) tools_usage "$0"; exit 2 ;;
esac

cache="$(tools_cache_dir)"
key="$(printf 'zellij %s features %s recipe %s\n' "$ZELLIJ_VERSION" "$FEATURES" "$RECIPE" | tools_key)"
final="$cache/zellij-$ZELLIJ_VERSION-$key/zellij"

if [ -x "$final" ]; then printf '%s\n' "$final"; exit 0; fi
[ "$mode" = locate ] && exit 3

mkdir -p "$cache"
exec 9>"$cache/zellij.lock"
flock 9
if [ -x "$final" ]; then printf '%s\n' "$final"; exit 0; fi
command -v cargo >/dev/null 2>&1 || tools_die "cargo is needed to install zellij (Rust from rustup)"

started=$(date +%s)
work="$cache/build-zellij-$key"
rm -rf "$work"
tools_log "installing zellij $ZELLIJ_VERSION from crates.io (cargo install --locked; many minutes on two cores)"
env RUSTUP_TOOLCHAIN="${PI_HANDOFF_RUST_TOOLCHAIN:-stable}" \
  cargo install --locked --quiet "zellij@$ZELLIJ_VERSION" --no-default-features --features "$FEATURES" \
  --root "$work/root" --target-dir "$work/target" >&2
tools_publish "$work/root/bin/zellij" "$final"
printf 'built in %s s on %s core(s)\n' "$(($(date +%s) - started))" "$(nproc)" >"$(dirname "$final")/BUILD"
rm -rf "$work"
tools_log "built $("$final" --version) in $(($(date +%s) - started)) s"
printf '%s\n' "$final"
