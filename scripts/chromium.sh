#!/usr/bin/env bash
# Makes sure a Chromium is installed for the dashboard's browser test, and prints its path.
# Usage: scripts/chromium.sh [ensure|path]
#
#   ensure  (default) install Debian's `chromium` package with apt when none is found, then
#           print the path; needs root or sudo the first time.
#   path    print the path, or fail when there is none.
#
# SLEET_CHROMIUM=/path/to/chromium uses that binary instead. The test starts it headless, on
# a profile of its own, talking to it over its DevTools port on 127.0.0.1 only.
set -euo pipefail

find_chromium() {
    local candidate
    for candidate in "${SLEET_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

case "${1:-ensure}" in
    path)
        find_chromium || { echo "scripts/chromium.sh: no Chromium found (run scripts/chromium.sh ensure)" >&2; exit 1; }
        ;;
    ensure)
        if find_chromium; then
            exit 0
        fi
        sudo=()
        if [ "$(id -u)" -ne 0 ]; then
            command -v sudo >/dev/null 2>&1 || { echo "scripts/chromium.sh: installing Chromium needs root or sudo" >&2; exit 1; }
            sudo=(sudo)
        fi
        echo "scripts/chromium.sh: installing Debian's chromium (apt-get)" >&2
        "${sudo[@]}" apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium >&2
        find_chromium || { echo "scripts/chromium.sh: apt installed chromium, yet no binary was found" >&2; exit 1; }
        ;;
    -h|--help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
        ;;
    *)
        echo "scripts/chromium.sh: unknown command $1 (ensure or path)" >&2
        exit 2
        ;;
esac
