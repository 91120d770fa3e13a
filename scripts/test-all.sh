#!/usr/bin/env bash
# Runs every suite — type-check, lint, import cycles, jest (unit + integration), interop (pytest with Triton's clients),
# deployment (pytest: container image, chart and manifests, replicas behind a load balancer) —
# and ends with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
out=$(mktemp -d)
passed=0
failed=0

# Deadlines for the two long steps, so that `npm test` always ends inside CI's 90 minutes: 30 minutes for jest (about
# 10 on a 2-core machine of its own; 35 were measured with both cores kept busy by other work, load average 8-12),
# 40 for the pytest suites (a container image build among them), leaving 20 for set-up (npm ci, the test tools),
# build and lint. Past its deadline a step's processes are listed and killed, and the step counts as one failure.
# Seconds; the variables override them.
JEST_DEADLINE=${TSTRITON_JEST_DEADLINE_SECS:-1800}
PYTEST_DEADLINE=${TSTRITON_PYTEST_DEADLINE_SECS:-2400}

# with_deadline SECONDS NAME LOG COMMAND...: runs COMMAND in a process group of its own, output to LOG, and returns
# its status. Past SECONDS it prints what still runs in that group, ends the group (TERM, KILL 15 s later) and
# returns 124. Children the command started stay in its group, so none survives it: what is still running when the
# command has exited is listed and killed too.
group=
trap '[ -n "$group" ] && kill -KILL -- "-$group" 2>/dev/null; exit 130' INT TERM
list_group() {
  ps -eo pgid=,pid=,etimes=,args= | awk -v g="$group" '$1 == g { p = $2; t = $3; $1 = $2 = $3 = ""; sub(/^ +/, ""); print "  pid " p ", up " t " s: " $0 }' | cut -c1-240
}
with_deadline() {
  local secs=$1 name=$2 log=$3; shift 3
  set -m
  "$@" >"$log" 2>&1 &
  group=$!
  set +m
  local end=$((SECONDS + secs)) rc
  while kill -0 "$group" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 1; done
  if kill -0 "$group" 2>/dev/null; then
    echo "FAIL $name: still running after its ${secs} s deadline; killing its processes:"
    list_group
    kill -TERM -- "-$group" 2>/dev/null
    for _ in $(seq 15); do kill -0 -- "-$group" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$group" 2>/dev/null
    wait "$group" 2>/dev/null
    rc=124
  else
    wait "$group"; rc=$?
    if kill -0 -- "-$group" 2>/dev/null; then
      echo "note: $name exited leaving processes running; killing them:"
      list_group
      kill -KILL -- "-$group" 2>/dev/null
    fi
  fi
  group=
  return "$rc"
}

# The interop and deployment suites drive the server with tools this installs; a failed install fails the run.
tools=installed
if ! bash scripts/install-test-tools.sh >"$out/install-test-tools.log" 2>&1; then
  failed=$((failed + 1)); tools=missing
  echo "FAIL install-test-tools: scripts/install-test-tools.sh failed (its last lines below)"
  tail -20 "$out/install-test-tools.log"
fi

step() { # name, command...: a check that counts as one test
  local name=$1; shift
  if "$@" >"$out/$name.log" 2>&1; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; tail -40 "$out/$name.log"; fi
}

step build npm run --silent build
step typecheck npx tsc -p tsconfig.json --noEmit
step lint npx eslint .
step cycles node scripts/check-cycles.js

# forceExit (jest.config.js) ends jest once it has reported, and the watchdog environment fails the file that left
# something open; the deadline is for a jest that never reports.
with_deadline "$JEST_DEADLINE" jest "$out/jest.log" npx jest --ci --json --outputFile="$out/jest.json"
jest_rc=$?
tail -60 "$out/jest.log"
[ "$jest_rc" -eq 124 ] && failed=$((failed + 1))
if [ -s "$out/jest.json" ]; then
  read -r jp jf < <(node -e 'const r=require(process.argv[1]);console.log(r.numPassedTests, r.numFailedTests + r.numRuntimeErrorTestSuites)' "$out/jest.json")
  passed=$((passed + jp)); failed=$((failed + jf))
else
  failed=$((failed + 1)); echo "FAIL jest produced no report"
fi

if [ "$tools" = missing ] && ! python3 -c 'import pytest' 2>/dev/null; then
  echo "SKIP pytest: the interop and deployment suites (test/interop, test/deploy) are not run: pytest is missing since the test tools' install failed (counted above)"
else
  [ "$tools" = missing ] && echo "note: the test tools' install failed (counted above); interop and deployment tests that need what is missing fail or skip, naming it"
  with_deadline "$PYTEST_DEADLINE" pytest "$out/pytest.log" python3 -m pytest test/interop test/deploy -q -p no:cacheprovider --junitxml="$out/pytest.xml"
  [ $? -eq 124 ] && failed=$((failed + 1))
  tail -40 "$out/pytest.log"
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
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
