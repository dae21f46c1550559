#!/usr/bin/env bash
# The workplace's live recorder (../shared/tools/stlive) with this repository's extensions on top:
# each *.patch here is applied, in name order, to a scratch copy of the harness, which then runs
# with the same variables (its README). The harness stays the workplace's; what this project adds
# to it lives here as small patches, so that a newer harness shows at once where they no longer apply.
#
#   10-quiet.patch  GEN_TYPES=quiet: `/gen TEXT` typed into the input box and sent, as a user runs
#                   a background generation (ST's generateQuietPrompt → Generate('quiet')); TEXT is
#                   QUIET_PROMPT (default in the patch), recorded as the vector's `quiet_prompt`.
#   20-group.patch  GROUP=on GROUP_CASES=g3swap,g3append,...: more group chats (casecmp GROUP_VARIANTS),
#                   each a group of its own created with the group panel's model: three members
#                   (the third, Oren, from FIXTURES_EXTRA=tests/stlive/fixtures), ST's generation
#                   modes, a muted member, a join prefix and suffix. stpreset gets the other
#                   members' cards as `group_cards` and the settings as context fields (SPEC §18.3);
#                   vectors record them as `group_settings`.
#
#   ST_GIT=... STPRESET_BIN=... PRESETS_DIR=... GEN_TYPES=quiet tools/stlive/run.sh
#   ... GROUP=on GROUP_CASES=g3swap,g3append FIXTURES_EXTRA=tests/stlive/fixtures EXTRA_SHAPES= tools/stlive/run.sh
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
