#!/usr/bin/env bash
# The library's first users use only its public API: the CLI (peerlink), the harness
# (PeerLinkHarness, peerlink-harness) and the example app (peerlink-tcp-chat) are built without
# package access (`packageAccess: false` in Package.swift, so the compiler refuses any `package`
# declaration of PeerLink's modules), and none imports PeerLink's internal modules.
# Ends with "N passed, M failed"; exit status 0 only when nothing failed.
#
#   scripts/ci/check-public-api-users.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
USERS=(peerlink PeerLinkHarness peerlink-harness peerlink-tcp-chat)
INTERNAL="PeerLinkCore|PeerLinkWire"
passed=0; failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

if ! manifest=$(swift package dump-package 2>&1); then
    fail "swift package dump-package failed: $manifest"
else
    # target name, package access, source directory; one line each.
    targets=$(python3 -c '
import json, sys
for t in json.load(sys.stdin)["targets"]:
    path = t.get("path") or ("Sources/" + t["name"])
    print(t["name"], "yes" if t.get("packageAccess", True) else "no", path)' <<<"$manifest")
    for user in "${USERS[@]}"; do
        read -r _ access path < <(awk -v n="$user" '$1 == n' <<<"$targets")
        if [[ -z ${access:-} ]]; then
            fail "$user: no such target in Package.swift"
            continue
        fi
        if [[ $access == yes ]]; then
            fail "$user is built with package access: set packageAccess: false on it in Package.swift"
        else
            ok "$user is built without package access"
        fi
        hits=$(grep -rnE "^\s*(@[A-Za-z_]+(\([^)]*\))? )*(public |package |internal )?import ($INTERNAL)\b" "$path" --include='*.swift')
        if [[ -n $hits ]]; then
            fail "$user imports an internal module:"; sed 's/^/    /' <<<"$hits"
        else
            ok "$user imports none of ${INTERNAL//|/, }"
        fi
        access=
    done
fi
echo "$passed passed, $failed failed"
((failed == 0))
