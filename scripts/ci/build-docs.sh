#!/usr/bin/env bash
# Builds the API reference with DocC from the package's symbol graphs, so it cannot rot: a
# link in a doc comment or an article to a symbol that no longer exists, or any other DocC
# warning but a missing parameter description, fails; so does a public symbol added without a
# doc comment (scripts/ci/doc_coverage.py holds the count of undocumented ones to a ratchet).
#   scripts/ci/build-docs.sh [OUTPUT_DIRECTORY]   (default .build/docs; one DocC archive per module)
# Needs a debug build (swift build); reuses it. Ends with "N passed, M failed" (one per module,
# and one for the coverage).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/.build/docs}
cd "$root"
command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH
modules=(PeerLink PeerLinkAvahi PeerLinkBluetooth PeerLinkWiFiDirect PeerLinkStore PeerLinkTesting)
passed=0; failed=0
graphs=$(mktemp -d /tmp/peerlink-symbols.XXXXXX)
trap 'rm -rf "$graphs"' EXIT
if ! swift package dump-symbol-graph --minimum-access-level public >"$graphs/dump.log" 2>&1; then
    tail -20 "$graphs/dump.log"; echo "FAIL symbol graphs"; echo "0 passed, 1 failed"; exit 1
fi
dir=$(sed -n 's/^Files written to //p' "$graphs/dump.log" | tail -1)
[ -d "$dir" ] || { echo "FAIL no symbol graph directory in: $(tail -3 "$graphs/dump.log")"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$out"
for m in "${modules[@]}"; do
    mkdir -p "$graphs/$m"
    cp "$dir/$m.symbols.json" "$graphs/$m/"
    cp "$dir/$m"@*.symbols.json "$graphs/$m/" 2>/dev/null
    catalog="Sources/$m/$m.docc"
    args=()
    [ -d "$catalog" ] && args+=("$catalog")
    docc convert "${args[@]}" --additional-symbol-graph-dir "$graphs/$m" --fallback-display-name "$m" \
        --fallback-bundle-identifier "org.peerlink.$m" --output-path "$out/$m.doccarchive" >"$graphs/$m.log" 2>&1
    rc=$?
    # Missing parameter descriptions are counted by the coverage below, not here.
    problems=$(grep -E "(warning|error):" "$graphs/$m.log" | grep -v "is missing documentation" || true)
    if [ $rc = 0 ] && [ -z "$problems" ]; then
        echo "ok   $m: $out/$m.doccarchive"; passed=$((passed + 1))
    else
        echo "FAIL $m (docc exit $rc):"; grep -E -A6 "(warning|error):" "$graphs/$m.log" | grep -v "is missing documentation" | head -40
        failed=$((failed + 1))
    fi
done
if python3 scripts/ci/doc_coverage.py "$dir" scripts/ci/doc-coverage-baseline.txt "${modules[@]}"; then
    passed=$((passed + 1)); else failed=$((failed + 1)); fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
