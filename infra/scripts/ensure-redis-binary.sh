#!/usr/bin/env bash
# Installs redis-server from Debian's packages when the binary is missing (the service starts it
# itself when nothing answers at a local REDIS_URL). Needs root, as on the project's machines.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then exit 0; fi
echo "redis-server not found: installing it from Debian's packages" >&2
if [ "$(id -u)" != "0" ]; then
  echo "not root: run 'apt-get update && apt-get install -y redis-server' as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq redis-server >&2
