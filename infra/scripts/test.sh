#!/usr/bin/env bash
# `npm test`: the test files (in parallel, two at a time), then the benchmark smoke test on its own.
# With VITEST_JSON_DIR set (CI), each run also writes a JSON report there (main.json, bench.json).
set -uo pipefail
cd "$(dirname "$0")/../.."
report() {
  if [ -n "${VITEST_JSON_DIR:-}" ]; then echo "--reporter=default --reporter=json --outputFile=$VITEST_JSON_DIR/$1.json"; fi
}
# shellcheck disable=SC2046
npx vitest run $(report main) "$@"
main=$?
# shellcheck disable=SC2046
npx vitest run --config vitest.bench.config.ts $(report bench) "$@"
bench=$?
[ $main -eq 0 ] && [ $bench -eq 0 ]
