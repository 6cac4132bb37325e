#!/usr/bin/env bash
# Builds the client's browser bundle (client/src → client/dist/browser/tds-client.js) when it is
# missing or older than its sources, for the tests that load it (the browser test, the size
# test). `npm run build` builds the whole package (declarations included). Quiet when fresh.
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=client/dist/browser/tds-client.js
fresh() { [ -f "$bundle" ] && [ -z "$(find client/src client/vite.config.ts client/package.json -newer "$bundle" -type f -print -quit)" ]; }
if fresh; then exit 0; fi
# Two test files at once: one builds, the other waits and finds it built.
mkdir -p client/dist
exec 9>client/dist/.build.lock
flock 9
if fresh; then exit 0; fi
echo "building the client's browser bundle ($bundle)" >&2
node_modules/.bin/vite build --config client/vite.config.ts >&2
