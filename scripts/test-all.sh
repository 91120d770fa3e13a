#!/usr/bin/env bash
# Runs every suite — type-check, lint, import cycles, jest (unit + integration), interop (pytest with Triton's clients),
# deployment (pytest: container image, chart and manifests, replicas behind a load balancer) —
# and ends with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
bash scripts/install-test-tools.sh >/dev/null || echo "warning: could not install the interop test tools (see scripts/install-test-tools.sh)"
out=$(mktemp -d)
passed=0
failed=0

step() { # name, command...: a check that counts as one test
  local name=$1; shift
  if "$@" >"$out/$name.log" 2>&1; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; tail -40 "$out/$name.log"; fi
}

step build npm run --silent build
step typecheck npx tsc -p tsconfig.json --noEmit
step lint npx eslint .
step cycles node scripts/check-cycles.js

npx jest --ci --json --outputFile="$out/jest.json" 2>&1 | tail -60
if [ -s "$out/jest.json" ]; then
  read -r jp jf < <(node -e 'const r=require(process.argv[1]);console.log(r.numPassedTests, r.numFailedTests + r.numRuntimeErrorTestSuites)' "$out/jest.json")
  passed=$((passed + jp)); failed=$((failed + jf))
else
  failed=$((failed + 1)); echo "FAIL jest produced no report"
fi

python3 -m pytest test/interop test/deploy -q -p no:cacheprovider --junitxml="$out/pytest.xml" 2>&1 | tail -40
if [ -s "$out/pytest.xml" ]; then
  read -r pp pf < <(python3 - "$out/pytest.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - sk, f)
PY
)
  passed=$((passed + pp)); failed=$((failed + pf))
else
  failed=$((failed + 1)); echo "FAIL pytest produced no report"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
