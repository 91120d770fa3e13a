#!/usr/bin/env python3
"""Runs test/deploy/test_scale_out.py's scenarios by hand and prints what they measured as the markdown table in
docs/deploy.md "Scaling out and rolling updates": three replicas of dist/examples/add-sub/server.js behind haproxy,
16 HTTP and 16 gRPC clients, a rolling restart, then a SIGKILL of one replica.

    npm run build && bash scripts/install-deploy-tools.sh
    python3 bench/scale-out/run.py [--runs 3] [--config deploy/haproxy/haproxy.cfg]

--config runs another haproxy config with the same environment variables (to see what a change costs, e.g. without
`retry-on`)."""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "deploy"))

from scale_out_support import (HAPROXY_CONFIG, PROTOCOLS, Cluster, describe_failures, missing_tools,  # noqa: E402
                               rolling_restart, sigkill)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="how many times to run both scenarios (default 1)")
    parser.add_argument("--config", type=Path, default=HAPROXY_CONFIG, help="haproxy config (default: %(default)s)")
    args = parser.parse_args()
    missing = missing_tools()
    if missing:
        sys.exit("needs " + ", ".join(missing))

    rows = []
    for run in range(1, args.runs + 1):
        cluster = Cluster(args.config.resolve())
        cluster.start()
        try:
            rolling = rolling_restart(cluster)
            killed = sigkill(cluster)
        finally:
            cluster.stop()
        for p in PROTOCOLS:
            rows.append((run, "rolling restart (SIGTERM each in turn)", p, rolling[p], rolling["resent"][p], "-"))
        for p in PROTOCOLS:
            rows.append((run, "SIGKILL one replica", p, killed[p], killed["resent"][p],
                         f"{killed['down_after']:.2f} s (requests failing for {killed[p + '_failing_for']:.2f} s)"))
        print(f"run {run}: rolling restart exit codes {rolling['exit_codes']}, {rolling['seconds']:.1f} s",
              file=sys.stderr)

    print("| run | scenario | protocol | requests | failed | haproxy retries / redispatches | DOWN in haproxy after |")
    print("|---|---|---|---:|---:|---:|---|")
    for run, scenario, p, outcome, (retries, redispatches), down in rows:
        print(f"| {run} | {scenario} | {p.upper() if p == 'http' else 'gRPC'} | {outcome.total} | "
              f"{len(outcome.failures)} | {retries} / {redispatches} | {down} |")
    failures = [(run, scenario, p, describe_failures(o)) for run, scenario, p, o, _, _ in rows if o.failures]
    for run, scenario, p, text in failures:
        print(f"run {run}, {scenario}, {p}: {text}", file=sys.stderr)


if __name__ == "__main__":
    main()
