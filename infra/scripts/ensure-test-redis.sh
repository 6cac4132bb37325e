#!/usr/bin/env bash
# Before the tests: Redis must answer at 127.0.0.1:6379. Installs redis-server if missing and
# starts one (nothing kept on disk) if nothing answers.
set -euo pipefail
bash "$(dirname "$0")/ensure-redis-binary.sh"
answers() { (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; }
if answers; then exit 0; fi
echo "starting redis-server on 127.0.0.1:6379 for the tests" >&2
redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --maxmemory-policy noeviction >/dev/null
for _ in $(seq 1 50); do answers && exit 0; sleep 0.1; done
echo "redis-server did not start" >&2
exit 1
