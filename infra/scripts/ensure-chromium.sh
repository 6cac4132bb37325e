#!/usr/bin/env bash
# The console's browser tests drive Debian's Chromium (package `chromium`) with playwright-core.
# Installs it when /usr/bin/chromium is missing; never downloads a browser build of its own.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
echo "installing Debian's chromium for the console's browser tests" >&2
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Several test files may ask at once: one installs, the others wait for the lock.
exec 9>/tmp/tds-ensure-chromium.lock
flock 9
if [ -x /usr/bin/chromium ]; then exit 0; fi
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
test -x /usr/bin/chromium
