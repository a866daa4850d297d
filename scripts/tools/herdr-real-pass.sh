#!/usr/bin/env bash
# `npm run test:herdr-real`: every Herdr scenario against the real Herdr alone. Builds it first when
# this machine has none (scripts/tools/herdr.sh), says which one runs, then runs the herdr-real
# vitest project with any further arguments (file filters, -t).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$(bash "$here/herdr.sh")"
printf 'real Herdr: %s (%s)\n' "$("$bin" --version)" "$bin" >&2
export PI_HANDOFF_HERDR_BIN="$bin"
exec vitest run --project herdr-real "$@"
