#!/usr/bin/env bash
# The workplace's live recorder (../shared/tools/stlive) with this repository's extensions on top:
# each *.patch here is applied, in name order, to a scratch copy of the harness, which then runs
# with the same variables (its README). The harness stays the workplace's; what this project adds
# to it lives here as small patches, so that a newer harness shows at once where they no longer apply.
#
#   quiet.patch  GEN_TYPES=quiet: `/gen TEXT` typed into the input box and sent, as a user runs a
#                background generation (ST's generateQuietPrompt → Generate('quiet')); TEXT is
#                QUIET_PROMPT (default in the patch), recorded as the vector's `quiet_prompt`.
#
#   ST_GIT=... STPRESET_BIN=... PRESETS_DIR=... GEN_TYPES=quiet tools/stlive/run.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shared=${STLIVE_HARNESS:-$(cd "$here/../../../shared/tools/stlive" && pwd)}
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$shared/." "$copy/"
for p in "$here"/*.patch; do
    patch --quiet --forward -p1 -d "$copy" < "$p" || { echo "tools/stlive: $(basename "$p") no longer applies to $shared" >&2; exit 2; }
done
# run.sh finds its lib/ and fixtures/ beside itself: the patched copy.
FIXTURES=${FIXTURES:-$shared/fixtures} bash "$copy/run.sh"
