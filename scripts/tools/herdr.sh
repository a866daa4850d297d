#!/usr/bin/env bash
# Prints the path of the real Herdr 0.8.2, built from the unchanged sources in shared/vendor/herdr/
# once per machine and kept in the tools cache (scripts/tools/lib.sh) outside the checkout.
#
# Invariants:
# - The sources are the vendor archives whose checksums are committed here
#   (herdr-0.8.2.sha256, a copy of the vendor folder's SHA256SUMS); an archive that does not match
#   is refused, never built. The cache key is those checksums plus this recipe, so a cached binary
#   is reused without the vendor folder (a clean clone elsewhere on the same machine).
# - Nothing is fetched but crates (crates.io, pinned by Herdr's Cargo.lock) and Zig (PyPI's
#   ziglang 0.15.2): the two Zig packages libghostty-vt needs come from the vendor archives, and
#   zig runs in --system mode, so it never reaches for the network.
# - The one change to the sources, herdr-lib-vt-only.patch, touches only Ghostty's zig build graph:
#   with -Demit-lib-vt (what Herdr's build.rs asks) it configures the libghostty-vt artifacts and
#   nothing else, so the app's, docs' and benches' lazy packages (fonts, GTK, ...) are not needed.
#   No Herdr source and no line of the terminal library is changed.
set -euo pipefail
TOOL_NAME=herdr.sh
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"

HERDR_VERSION=0.8.2
ZIG_VERSION=0.15.2
UUCODE_HASH=uucode-0.2.0-ZZjBPqZVVABQepOqZHR7vV_NcaN-wats0IB6o-Exj6m9
HIGHWAY_HASH=N-V-__8AAGmZhABbsPJLfbqrh6JTHsXhY6qCaLAQyx25e0XE
# Bump when the recipe below changes what is built.
RECIPE=1

mode=build
case "${1:-}" in
  "") ;;
  --locate) mode=locate ;;
  -h | --help) tools_usage "$0"; exit 0 ;;
  *) tools_usage "$0"; exit 2 ;;
esac

cache="$(tools_cache_dir)"
key="$( { cat "$here/herdr-$HERDR_VERSION.sha256" "$here/herdr-lib-vt-only.patch"; echo "recipe $RECIPE zig $ZIG_VERSION"; } | tools_key)"
final="$cache/herdr-$HERDR_VERSION-$key/herdr"

if [ -x "$final" ]; then printf '%s\n' "$final"; exit 0; fi
[ "$mode" = locate ] && exit 3

# Where the vendor archives are: an explicit folder, else beside the project (../shared), else
# the workplace's shared folder (a clone made elsewhere on this machine).
vendor_dir() {
  local candidate
  for candidate in "${PI_HANDOFF_HERDR_VENDOR:-}" "$root/../shared/vendor/herdr" /work/shared/vendor/herdr; do
    [ -n "$candidate" ] && [ -f "$candidate/herdr-$HERDR_VERSION.tar.gz" ] && { printf '%s\n' "$candidate"; return 0; }
  done
  return 1
}

mkdir -p "$cache"
exec 9>"$cache/herdr.lock"
flock 9
# Another run may have built it while this one waited.
if [ -x "$final" ]; then printf '%s\n' "$final"; exit 0; fi

vendor="$(vendor_dir)" || tools_die "no Herdr $HERDR_VERSION sources: set PI_HANDOFF_HERDR_VENDOR to the folder holding herdr-$HERDR_VERSION.tar.gz (shared/vendor/herdr)"
(cd "$vendor" && sha256sum --quiet -c "$here/herdr-$HERDR_VERSION.sha256") || tools_die "the archives in $vendor do not match herdr-$HERDR_VERSION.sha256"
command -v cargo >/dev/null 2>&1 || tools_die "cargo is needed to build Herdr (Rust from rustup)"
command -v python3 >/dev/null 2>&1 || tools_die "python3 with pip is needed to fetch Zig $ZIG_VERSION from PyPI"

started=$(date +%s)
zig_dir="$cache/ziglang-$ZIG_VERSION"
zig="$zig_dir/ziglang/zig"
if [ ! -x "$zig" ]; then
  tools_log "fetching Zig $ZIG_VERSION from PyPI (ziglang)"
  rm -rf "$zig_dir.partial"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$zig_dir.partial" "ziglang==$ZIG_VERSION" >&2
  rm -rf "$zig_dir" && mv "$zig_dir.partial" "$zig_dir"
fi
[ "$("$zig" version)" = "$ZIG_VERSION" ] || tools_die "zig at $zig is not $ZIG_VERSION"

work="$cache/build-herdr-$key"
rm -rf "$work"
mkdir -p "$work/zig-cache"
tar xzf "$vendor/herdr-$HERDR_VERSION.tar.gz" -C "$work"
src="$work/herdr-$HERDR_VERSION"
(cd "$src" && patch -s -p1 <"$here/herdr-lib-vt-only.patch")

# The Zig packages, unpacked under their own hashes; zig fetch prints the hash it computed.
for pair in "uucode-0.2.0.tar.gz $UUCODE_HASH" "highway-66486a10.tar.gz $HIGHWAY_HASH"; do
  set -- $pair
  got="$("$zig" fetch --global-cache-dir "$work/zig-cache" "$vendor/$1")"
  [ "$got" = "$2" ] || tools_die "$1 unpacked as $got, expected $2"
done

tools_log "building Herdr $HERDR_VERSION (cargo build --release --locked; minutes on two cores)"
(
  cd "$src"
  env RUSTUP_TOOLCHAIN="${PI_HANDOFF_RUST_TOOLCHAIN:-stable}" \
    ZIG="$zig" \
    ZIG_GLOBAL_CACHE_DIR="$work/zig-cache" \
    ZIG_LOCAL_CACHE_DIR="$work/zig-local-cache" \
    LIBGHOSTTY_VT_ZIG_SYSTEM_DIR="$work/zig-cache/p" \
    CARGO_TARGET_DIR="$work/target" \
    cargo build --release --locked --quiet >&2
)
tools_publish "$work/target/release/herdr" "$final"
printf 'built in %s s on %s core(s)\n' "$(($(date +%s) - started))" "$(nproc)" >"$(dirname "$final")/BUILD"
rm -rf "$work"
tools_log "built $("$final" --version) in $(($(date +%s) - started)) s"
printf '%s\n' "$final"
