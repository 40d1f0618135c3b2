#!/usr/bin/env bash
# Installs PeerLink on a Raspberry Pi (Raspberry Pi OS) or a Debian 12 machine: the peerlink
# binary, its man page and shell completions, the example daemon configuration (kept if one
# exists), the system user and the systemd unit. Run from the repository, as root:
#   Hardware/pi/install.sh                      # build (release), install, enable peerlink-daemon
#   Hardware/pi/install.sh --unit receive       # peerlink-receive.service instead
#   Hardware/pi/install.sh --unit none          # files only, no service enabled
#   Hardware/pi/install.sh --binary PATH        # install this binary instead of building one
#   Hardware/pi/install.sh --destdir DIR        # stage everything under DIR (no apt, user or systemctl)
# Running it again upgrades the binary, man page, completions and unit; it never overwrites
# /etc/peerlink/daemon.toml.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
unit=daemon binary= destdir= prefix=/usr/local
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
        --unit) unit=${2:?--unit needs daemon, receive or none}; shift ;;
        --binary) binary=${2:?--binary needs a path}; shift ;;
        --destdir) destdir=${2:?--destdir needs a directory}; shift ;;
        --prefix) prefix=${2:?--prefix needs a directory}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case $unit in daemon|receive|none) ;; *) echo "install: --unit is daemon, receive or none, not '$unit'" >&2; exit 2 ;; esac
if [ -z "$destdir" ] && [ "$(id -u)" != 0 ]; then
    echo "install: run as root (or stage with --destdir DIR)" >&2; exit 1
fi
say() { printf '[install] %s\n' "$*"; }
command -v swift >/dev/null || export PATH=/opt/swift/usr/bin:$PATH

if [ -z "$destdir" ]; then
    say "runtime packages: avahi-daemon bluez wpasupplicant libavahi-client3 libdbus-1-3 libsqlite3-0"
    apt-get install -y -q avahi-daemon bluez wpasupplicant libavahi-client3 libdbus-1-3 libsqlite3-0 >/dev/null
fi
if [ -z "$binary" ]; then
    say "building peerlink (release; the first build takes several minutes on a Pi)"
    (cd "$root" && swift build -c release --product peerlink)
    binary="$root/.build/release/peerlink"
fi
[ -x "$binary" ] || { echo "install: no peerlink binary at $binary" >&2; exit 1; }

extras=$(mktemp -d /tmp/peerlink-extras.XXXXXX)
trap 'rm -rf "$extras"' EXIT
"$root/scripts/make-extras.sh" "$binary" "$extras" >/dev/null

d=$destdir
install -D -m 755 "$binary" "$d$prefix/bin/peerlink"
install -D -m 644 "$extras/man/peerlink.1" "$d$prefix/share/man/man1/peerlink.1"
install -D -m 644 "$extras/completions/peerlink.bash" "$d$prefix/share/bash-completion/completions/peerlink"
install -D -m 644 "$extras/completions/_peerlink" "$d$prefix/share/zsh/site-functions/_peerlink"
install -D -m 644 "$extras/completions/peerlink.fish" "$d$prefix/share/fish/vendor_completions.d/peerlink.fish"
install -D -m 644 "$root/README.md" "$d$prefix/share/doc/peerlink/README.md"
install -D -m 644 "$root/CHANGELOG.md" "$d$prefix/share/doc/peerlink/CHANGELOG.md"
say "peerlink $("$d$prefix/bin/peerlink" --version) in $d$prefix/bin, with its man page (man peerlink) and completions"

if [ -e "$d/etc/peerlink/daemon.toml" ]; then
    say "keeping the existing $d/etc/peerlink/daemon.toml"
else
    install -D -m 644 "$root/Hardware/pi/daemon.toml" "$d/etc/peerlink/daemon.toml"
    say "example configuration in $d/etc/peerlink/daemon.toml (every key: docs/CONFIG.md)"
fi
"$d$prefix/bin/peerlink" daemon --check-config "$d/etc/peerlink/daemon.toml" >/dev/null || {
    echo "install: $d/etc/peerlink/daemon.toml does not pass --check-config (above); fix it before starting the daemon" >&2; exit 1; }

for u in peerlink-daemon peerlink-receive; do
    sed "s#/usr/local/bin/peerlink#$prefix/bin/peerlink#g; s#/usr/local/share/doc/peerlink#$prefix/share/doc/peerlink#g" \
        "$root/Hardware/pi/$u.service" | install -D -m 644 /dev/stdin "$d/etc/systemd/system/$u.service"
done
if [ -n "$destdir" ]; then
    say "staged under $destdir; nothing enabled"
    exit 0
fi
# netdev (made by avahi-daemon and wpasupplicant): wpa_supplicant's D-Bus policy lets only
# root and netdev form Wi-Fi Direct groups; without it the node stays on Bluetooth.
if ! id peerlink >/dev/null 2>&1; then
    useradd --system --groups netdev --home /var/lib/peerlink --shell /usr/sbin/nologin peerlink
    say "system user peerlink (group netdev)"
fi
if [ "$unit" != none ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable --now "peerlink-$unit"
    say "peerlink-$unit enabled and started: journalctl -u peerlink-$unit"
elif [ "$unit" != none ]; then
    say "systemd is not running here: start peerlink-$unit yourself"
fi
say "next: sudo -u peerlink PEERLINK_CONFIG_DIR=/var/lib/peerlink/config peerlink id   (the node's peer ID)"
say "      peerlink doctor                                                           (which radios work)"
