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
JEST_DEADLINE=${TSTRITON_JEST_DEADLINE_SECS:-1500}
JEST_THREADS_DEADLINE=${TSTRITON_JEST_THREADS_DEADLINE_SECS:-600}
PYTEST_DEADLINE=${TSTRITON_PYTEST_DEADLINE_SECS:-1500}
PYTEST_THREADS_DEADLINE=${TSTRITON_PYTEST_THREADS_DEADLINE_SECS:-900}
# The front-end thread count of the second runs: two, which a 2-core machine does not get by default (one).
THREADED_COUNT=2

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

# count_jest LABEL JSON: adds a jest report's tests to the totals and names each failed test, with LABEL (the run), so
# that a failure says which run it came from. No report is one failure.
count_jest() {
  local label=$1 json=$2 jp jf
  if [ ! -s "$json" ]; then failed=$((failed + 1)); echo "FAIL $label: jest produced no report"; return; fi
  read -r jp jf < <(node -e '
    const r = require(process.argv[1]);
    console.log(r.numPassedTests, r.numFailedTests + r.numRuntimeErrorTestSuites);
    for (const f of r.testResults) {
      const file = require("node:path").relative(process.cwd(), f.name);
      for (const a of f.assertionResults) if (a.status === "failed") console.error(`FAIL ${process.argv[2]}: ${file} › ${a.fullName}`);
      if (f.assertionResults.length === 0 && f.status === "failed") console.error(`FAIL ${process.argv[2]}: ${file} did not run`);
    }' "$json" "$label")
  passed=$((passed + jp)); failed=$((failed + jf))
}

# count_junit LABEL XML: the same for a pytest junit report (skipped tests count neither way).
count_junit() {
  local label=$1 xml=$2 pp pf
  if [ ! -s "$xml" ]; then failed=$((failed + 1)); echo "FAIL $label: pytest produced no report"; return; fi
  read -r pp pf < <(python3 - "$xml" "$label" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        print(f"FAIL {sys.argv[2]}: {case.get('classname')}::{case.get('name')}", file=sys.stderr)
print(t - f - sk, f)
PY
)
  passed=$((passed + pp)); failed=$((failed + pf))
}

# run_jest LABEL NAME DEADLINE [VAR=VALUE...] -- JEST-ARGS...: one jest run under its deadline, its log's end, its
# counts. forceExit (jest.config.js) ends jest once it has reported, and the watchdog environment fails the file that
# left something open; the deadline is for a jest that never reports.
run_jest() {
  local label=$1 name=$2 secs=$3; shift 3
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  echo "== $label"
  with_deadline "$secs" "$name" "$out/$name.log" env ${vars[@]+"${vars[@]}"} npx jest --ci --json --outputFile="$out/$name.json" "$@"
  local rc=$?
  tail -60 "$out/$name.log"
  [ "$rc" -eq 124 ] && failed=$((failed + 1))
  count_jest "$label" "$out/$name.json"
}

# run_pytest LABEL NAME DEADLINE [VAR=VALUE...] -- PYTEST-ARGS...: the same for pytest, with a junit report of its own.
run_pytest() {
  local label=$1 name=$2 secs=$3; shift 3
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done; shift
  echo "== $label"
  with_deadline "$secs" "$name" "$out/$name.log" env ${vars[@]+"${vars[@]}"} python3 -m pytest -q -p no:cacheprovider --junitxml="$out/$name.xml" -o junit_suite_name="$name" "$@"
  local rc=$?
  tail -40 "$out/$name.log"
  [ "$rc" -eq 124 ] && failed=$((failed + 1))
  count_junit "$label" "$out/$name.xml"
}

run_jest "jest: unit, integration, robustness" jest "$JEST_DEADLINE" --
# The threaded path (docs/threads.md): on 2 cores the default is one front-end thread, so the robustness suite's
# fuzzers and the interop suite's clients run again against servers with two, which inherit the variable.
run_jest "jest: robustness on ${THREADED_COUNT} front-end threads" jest-threads "$JEST_THREADS_DEADLINE" TSTRITON_HTTP_THREAD_COUNT="$THREADED_COUNT" -- --selectProjects robustness

if [ "$tools" = missing ] && ! python3 -c 'import pytest' 2>/dev/null; then
  echo "SKIP pytest: the interop and deployment suites (test/interop, test/deploy) are not run: pytest is missing since the test tools' install failed (counted above)"
else
  [ "$tools" = missing ] && echo "note: the test tools' install failed (counted above); interop and deployment tests that need what is missing fail or skip, naming it"
  run_pytest "pytest: interop and deployment" pytest "$PYTEST_DEADLINE" -- test/interop test/deploy
  # The deployment tests run once: they build and run the image and chart, whose servers' thread count is theirs.
  run_pytest "pytest: interop on ${THREADED_COUNT} front-end threads" pytest-threads "$PYTEST_THREADS_DEADLINE" TSTRITON_HTTP_THREAD_COUNT="$THREADED_COUNT" -- test/interop
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
