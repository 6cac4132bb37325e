#!/usr/bin/env bash
# Builds the web console (api/console → dist/console) when it is missing or older than its
# sources, so `npm start` serves /console on a fresh clone. Quiet when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
index=dist/console/index.html
if [ -f "$index" ] && [ -z "$(find api/console package-lock.json -newer "$index" -type f -print -quit)" ]; then
  exit 0
fi
echo "building the web console (dist/console)" >&2
node_modules/.bin/vite build --config api/console/vite.config.ts
