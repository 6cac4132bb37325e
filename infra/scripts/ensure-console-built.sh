#!/usr/bin/env bash
# Builds the web console (api/console → dist/console) when it is missing or older than its
# sources, so `npm start` serves /console on a fresh clone. Quiet when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
index=dist/console/index.html
fresh() { [ -f "$index" ] && [ -z "$(find api/console package-lock.json -newer "$index" -type f -print -quit)" ]; }
if fresh; then exit 0; fi
if [ ! -x node_modules/.bin/vite ]; then
  # Installed without devDependencies: the API runs, /console answers 404 until it is built.
  echo "warning: vite is not installed (npm ci --omit=dev?); the web console is not built" >&2
  exit 0
fi
# Two starts (or test files) at once: one builds, the other waits and finds it built.
mkdir -p dist
exec 9>dist/.console-build.lock
flock 9
if fresh; then exit 0; fi
echo "building the web console (dist/console)" >&2
node_modules/.bin/vite build --config api/console/vite.config.ts >&2
