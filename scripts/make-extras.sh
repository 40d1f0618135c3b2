#!/usr/bin/env bash
# The man page and shell completions of the peerlink CLI, generated from the commands' own
# help (swift-argument-parser's manual generator and completion scripts), so they cannot
# drift from what `peerlink <command> --help` says.
#   scripts/make-extras.sh PEERLINK_BINARY OUTPUT_DIRECTORY
# Writes OUTPUT_DIRECTORY/man/peerlink.1 and OUTPUT_DIRECTORY/completions/{peerlink.bash,_peerlink,peerlink.fish}.
# Builds argument-parser's generate-manual tool (seconds, once) in the package's build directory.
set -euo pipefail
bin=${1:?usage: make-extras.sh PEERLINK_BINARY OUTPUT_DIRECTORY}
out=${2:?usage: make-extras.sh PEERLINK_BINARY OUTPUT_DIRECTORY}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin" ] || { echo "make-extras: no peerlink binary at $bin (build it: swift build -c release --product peerlink)" >&2; exit 1; }
command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH
cd "$root"
swift build --product generate-manual >/dev/null 2>&1 || {
    echo "make-extras: could not build argument-parser's generate-manual tool:" >&2
    swift build --product generate-manual 2>&1 | tail -20 >&2; exit 1; }
tool="$(swift build --show-bin-path)/generate-manual"
mkdir -p "$out/man" "$out/completions"
# The page's date is the release's, not the build's, so two builds of one release agree.
date=$(sed -n 's/^## \[[0-9.]*\] - \([0-9-]*\)$/\1/p' CHANGELOG.md | head -1)
"$tool" "$bin" --output-directory "$out/man" ${date:+--date "$date"} --section 1
"$bin" --generate-completion-script bash >"$out/completions/peerlink.bash"
"$bin" --generate-completion-script zsh >"$out/completions/_peerlink"
"$bin" --generate-completion-script fish >"$out/completions/peerlink.fish"
echo "make-extras: $out/man/peerlink.1, $out/completions/{peerlink.bash,_peerlink,peerlink.fish}"
