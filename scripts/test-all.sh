#!/usr/bin/env bash
# Runs every suite — type-check, lint, import cycles, jest (unit + integration + robustness), interop (pytest with
# Triton's clients), deployment (pytest: container image, chart and manifests, replicas behind a load balancer), then
# the robustness and interop suites again against servers with two front-end threads — and ends with one line:
# "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
out=$(mktemp -d)
passed=0
failed=0

# Deadlines for the long steps, so that `npm test` always ends inside CI's 90 minutes: 26 minutes for jest, 4 for its
# robustness suite on front-end threads, 22 for the pytest suites (interop, and deployment with a container image
# build) and 15 for the interop suite on front-end threads: 67 in all, leaving 23 for set-up (npm ci and the test
# tools, ~16 on a fresh busy machine: the OpenTelemetry Collector builds from source), build, type-check and lint.
# Measured twice on a 2-core machine kept busy by other work (load average 1.4-7.7): 5.3-5.8, 0.6-0.7, 7.6-10.3
# (interop 5, deployment 3-5) and 4.1 minutes, 19-22 for the whole script. With both cores kept busy by two pinned
# busy loops and a benchmark beside them: 9.3, 1.7 and 12.6 minutes, and the threaded interop run past 10; jest took
# 16.8 minutes so loaded before `tstriton perf` and `analyze` added about 4 minutes of tests (measured beside a loaded run). Past its
# deadline a step's processes are listed and killed, and the step counts as one failure. Seconds; the variables
# override them.
JEST_DEADLINE=${TSTRITON_JEST_DEADLINE_SECS:-1560}
JEST_THREADS_DEADLINE=${TSTRITON_JEST_THREADS_DEADLINE_SECS:-240}
PYTEST_DEADLINE=${TSTRITON_PYTEST_DEADLINE_SECS:-1320}
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

# add_counts LABEL: reads a report's summary from stdin, "PASSED FAILED" then one line per failed test, adds the
# numbers to the totals and prints each failed test after "FAIL LABEL: ", so that it says which run it came from.
add_counts() {
  local label=$1 lines
  mapfile -t lines
  if [ "${#lines[@]}" -eq 0 ]; then failed=$((failed + 1)); echo "FAIL $label: its report could not be read"; return; fi
  local p f
  read -r p f <<<"${lines[0]}"
  passed=$((passed + p)); failed=$((failed + f))
  local name
  for name in "${lines[@]:1}"; do echo "FAIL $label: $name"; done
}

# count_jest LABEL JSON and count_pytest LABEL XML: a jest or pytest junit report into the totals (skipped tests count
# neither way). No report is one failure.
count_jest() {
  if [ ! -s "$2" ]; then failed=$((failed + 1)); echo "FAIL $1: jest produced no report"; return; fi
  add_counts "$1" < <(node -e '
    const r = require(process.argv[1]);
    console.log(r.numPassedTests, r.numFailedTests + r.numRuntimeErrorTestSuites);
    for (const f of r.testResults) {
      const file = require("node:path").relative(process.cwd(), f.name);
      for (const a of f.assertionResults) if (a.status === "failed") console.log(`${file} › ${a.fullName}`);
      if (f.assertionResults.length === 0 && f.status === "failed") console.log(`${file} did not run`);
    }' "$2")
}
count_pytest() {
  if [ ! -s "$2" ]; then failed=$((failed + 1)); echo "FAIL $1: pytest produced no report"; return; fi
  add_counts "$1" < <(python3 - "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - sk, f)
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        print(f"{case.get('classname')}::{case.get('name')}")
PY
)
}

# run_suite LABEL NAME DEADLINE [VAR=VALUE...] -- jest|pytest ARGS...: one run of jest or pytest with the variables
# set, under its deadline, with a report of its own ($out/NAME.json or .xml); prints a header, its log's end and how
# long it took, and adds its tests to the totals. forceExit (jest.config.js) ends jest once it has reported, and the
# watchdog environment fails the file that left something open; the deadline is for a run that never reports.
run_suite() {
  local label=$1 name=$2 secs=$3; shift 3
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  local tool=$2; shift 2
  local report cmd
  case $tool in
    jest) report=$out/$name.json; cmd=(npx jest --ci --json --outputFile="$report") ;;
    pytest) report=$out/$name.xml; cmd=(python3 -m pytest -q -p no:cacheprovider --junitxml="$report" -o junit_suite_name="$name") ;;
  esac
  echo "== $label (deadline $((secs / 60)) min)"
  local t0=$SECONDS rc
  with_deadline "$secs" "$name" "$out/$name.log" env ${vars[@]+"${vars[@]}"} "${cmd[@]}" "$@"
  rc=$?
  tail -50 "$out/$name.log"
  echo "== $label: $((SECONDS - t0)) s"
  [ "$rc" -eq 124 ] && failed=$((failed + 1))
  "count_$tool" "$label" "$report"
}

run_suite "jest: unit, integration, robustness" jest "$JEST_DEADLINE" -- jest
# The threaded path (docs/threads.md): on 2 cores the default is one front-end thread, so the robustness suite's
# fuzzers and the interop suite's clients run again against servers with two, which inherit the variable.
run_suite "jest: robustness on ${THREADED_COUNT} front-end threads" jest-threads "$JEST_THREADS_DEADLINE" TSTRITON_HTTP_THREAD_COUNT="$THREADED_COUNT" -- jest --selectProjects robustness

if [ "$tools" = missing ] && ! python3 -c 'import pytest' 2>/dev/null; then
  echo "SKIP pytest: the interop and deployment suites (test/interop, test/deploy) are not run: pytest is missing since the test tools' install failed (counted above)"
else
  [ "$tools" = missing ] && echo "note: the test tools' install failed (counted above); interop and deployment tests that need what is missing fail or skip, naming it"
  run_suite "pytest: interop and deployment" pytest "$PYTEST_DEADLINE" -- pytest test/interop test/deploy
  # The deployment tests run once: they build and run the image and chart, whose servers' thread count is theirs.
  run_suite "pytest: interop on ${THREADED_COUNT} front-end threads" pytest-threads "$PYTEST_THREADS_DEADLINE" TSTRITON_HTTP_THREAD_COUNT="$THREADED_COUNT" -- pytest test/interop
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
