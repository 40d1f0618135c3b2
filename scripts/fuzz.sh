#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ and runs each for a bounded time.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 20)
#
# Environment:
#   FUZZ_TARGETS="FrameFuzz HelloFuzz"  run only these targets (default: every Fuzz/*Fuzz.swift)
#   SWIFTC=/path/to/swiftc              compiler (default: swiftc on PATH, else /opt/swift/usr/bin/swiftc)
#   FUZZ_JOBS=N                         libFuzzer worker processes per target (default 1)
#
# Each target is compiled straight from Sources/PeerLinkWire (HTTPFuzz also with the daemon API's
# pure HTTP request reader, Sources/PeerLinkDaemon/API/HTTPRequestParser.swift) with
# `swiftc -sanitize=fuzzer,address -parse-as-library -O` (the toolchain's own libFuzzer), seeded
# with valid encodings written by Fuzz/Seeds/GenerateSeeds.swift, and run with -max_total_time.
# Corpora grow in Fuzz/corpus-<Target>/ and are reused by later runs; crash inputs land in
# Fuzz/bin/crashes/. Exits non-zero if any target crashed, printing the crash input's path and
# the command that reproduces it.
set -euo pipefail

SECONDS_PER_TARGET="${1:-20}"
case "$SECONDS_PER_TARGET" in
  ''|*[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET]" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -z "${SWIFTC:-}" ]]; then
  if command -v swiftc >/dev/null 2>&1; then SWIFTC="$(command -v swiftc)"
  elif [[ -x /opt/swift/usr/bin/swiftc ]]; then SWIFTC=/opt/swift/usr/bin/swiftc
  else echo "fuzz.sh: no swiftc on PATH or at /opt/swift/usr/bin" >&2; exit 2
  fi
fi

BIN="$ROOT/Fuzz/bin"
CRASHES="$BIN/crashes"
LOGS="$BIN/logs"
mkdir -p "$BIN" "$CRASHES" "$LOGS"

WIRE_SOURCES=(Sources/PeerLinkWire/*.swift)
# Sources some targets compile beside the Wire sources (pure Swift, no imports).
extra_sources() {
  case "$1" in
    HTTPFuzz) echo Sources/PeerLinkDaemon/API/HTTPRequestParser.swift ;;
  esac
}

if [[ -n "${FUZZ_TARGETS:-}" ]]; then
  read -r -a TARGETS <<<"$FUZZ_TARGETS"
else
  TARGETS=()
  for f in Fuzz/*Fuzz.swift; do TARGETS+=("$(basename "$f" .swift)"); done
  [[ -f Fuzz/Handshake/Package.swift ]] && TARGETS+=(HandshakeFuzz CoreFuzz)
fi

# Largest input per target: frames and Noise messages go up to 64 KiB.
max_len() {
  case "$1" in
    FrameFuzz) echo 66000 ;;
    DeframerFuzz) echo 140000 ;;
    HandshakeFuzz) echo 66000 ;;
    CoreFuzz) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

# Rebuilds $2 from the Wire sources plus $1 when any input is newer than the binary.
build() {
  local src="$1" out="$2"; shift 2
  local stale=0
  local extra
  read -r -a extra <<<"$(extra_sources "$(basename "$out")")"
  if [[ ! -x "$out" ]]; then stale=1
  else
    for f in "${WIRE_SOURCES[@]}" ${extra[@]+"${extra[@]}"} "$src"; do
      if [[ "$f" -nt "$out" ]]; then stale=1; break; fi
    done
  fi
  if (( stale )); then
    echo "== building $(basename "$out")"
    # The linker's "Cannot export local symbol '__asan_…'" warnings are harmless; hide them.
    if ! "$SWIFTC" "$@" -package-name peerlink -parse-as-library -O "${WIRE_SOURCES[@]}" ${extra[@]+"${extra[@]}"} "$src" -o "$out" 2> "$LOGS/$(basename "$out").build.log"; then
      grep -v "Cannot export local symbol" "$LOGS/$(basename "$out").build.log" >&2 || true
      echo "fuzz.sh: building $(basename "$out") failed" >&2
      exit 2
    fi
  fi
}

build Fuzz/Seeds/GenerateSeeds.swift "$BIN/GenerateSeeds"

# Swift's runtime keeps metadata caches alive at exit; LeakSanitizer would call them leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
# Swift's crash backtracer reads foreign memory, which ASan then reports as a second, bogus error.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"

JOB_ARGS=()
if [[ -n "${FUZZ_JOBS:-}" && "${FUZZ_JOBS}" != 1 ]]; then JOB_ARGS=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi

failed=()
summary=()
# The Noise handshake target needs swift-crypto, so it is a small SwiftPM package of its own
# (Fuzz/Handshake, whose PeerLinkWire and PeerLinkCore are symlinks to the real sources).
# Builds the package's targets (HandshakeFuzz, CoreFuzz) once; sets PACKAGE_BIN.
build_handshake() {
  [[ -n "${PACKAGE_BIN:-}" ]] && return
  local pkg=(--package-path Fuzz/Handshake -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
  echo "== building HandshakeFuzz and CoreFuzz (SwiftPM; the first build fetches and compiles swift-crypto)"
  if ! swift build "${pkg[@]}" > "$LOGS/HandshakeFuzz.build.log" 2>&1; then
    grep -v "Cannot export local symbol" "$LOGS/HandshakeFuzz.build.log" | grep -E "error" >&2 || true
    echo "fuzz.sh: building HandshakeFuzz and CoreFuzz failed (log $LOGS/HandshakeFuzz.build.log)" >&2
    exit 2
  fi
  PACKAGE_BIN="$(swift build "${pkg[@]}" --show-bin-path)"
}

for t in "${TARGETS[@]}"; do
  corpus="Fuzz/corpus-$t"
  mkdir -p "$corpus"
  if [[ "$t" == HandshakeFuzz || "$t" == CoreFuzz ]]; then
    build_handshake
    exe="$PACKAGE_BIN/$t"
    "$exe" --write-seeds "$corpus"
  else
    src="Fuzz/$t.swift"
    [[ -f "$src" ]] || { echo "fuzz.sh: no $src" >&2; exit 2; }
    build "$src" "$BIN/$t" -sanitize=fuzzer,address
    exe="$BIN/$t"
    "$BIN/GenerateSeeds" "$t" "$corpus"
  fi

  log="$LOGS/$t.log"
  before="$(ls -1 "$CRASHES" | sort)"
  echo "== fuzzing $t for ${SECONDS_PER_TARGET}s (corpus $corpus, log $log)"
  status=0
  "$exe" "$corpus" \
      -max_total_time="$SECONDS_PER_TARGET" \
      -max_len="$(max_len "$t")" \
      -timeout=25 \
      -rss_limit_mb=2048 \
      ${JOB_ARGS[@]+"${JOB_ARGS[@]}"} \
      -print_final_stats=1 \
      -artifact_prefix="$CRASHES/$t-" > "$log" 2>&1 || status=$?
  # With -jobs the output goes to fuzz-N.log files in the working directory.
  for f in fuzz-*.log; do [[ -f "$f" ]] && { cat "$f" >> "$log"; rm -f "$f"; }; done

  execs="$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | awk '{s+=$2} END {print s+0}')"
  cov="$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')"
  files="$(ls -1 "$corpus" | wc -l)"
  if (( status != 0 )); then
    new="$(comm -13 <(echo "$before") <(ls -1 "$CRASHES" | sort) | head -5)"
    echo "!! $t crashed (exit $status). Last lines of $log:" >&2
    grep -Ev "Cannot export local symbol" "$log" | grep -E "invariant violated|Fatal error|ERROR: |SUMMARY|Test unit written|==[0-9]+==" | head -20 >&2 || true
    if [[ -n "$new" ]]; then
      while read -r c; do
        echo "!! crash input: $CRASHES/$c" >&2
        echo "!! reproduce:   $exe $CRASHES/$c" >&2
      done <<<"$new"
    fi
    failed+=("$t")
    summary+=("$t: CRASH after ${execs} execs (see $log)")
  else
    summary+=("$t: ok, ${execs} execs in ${SECONDS_PER_TARGET}s, cov ${cov:-?}, corpus ${files} files")
  fi
done

echo "== summary"
printf '  %s\n' "${summary[@]}"
echo "$(( ${#TARGETS[@]} - ${#failed[@]} )) passed, ${#failed[@]} failed"
if (( ${#failed[@]} > 0 )); then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
