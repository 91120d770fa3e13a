#!/usr/bin/env bash
# The cost of OpenTelemetry tracing per request: npm run bench:http with tracing off, then with trace_mode
# opentelemetry at trace_rate 1 exporting to a local OpenTelemetry Collector (otelcol-tstriton, built by
# scripts/install-deploy-tools.sh; its spans go to a file under the output folder). Neither run writes
# docs/performance.md; both tables are printed and kept in $OUT (default bench/results/otel-cost).
# Compare the "server CPU µs/req" column of the two: on a shared machine it is steadier than req/s.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/results/otel-cost}
ARGS=${BENCH_ARGS:---rounds 3 --duration 2 --modes binary,json --concurrency 1,32}
PORT=${OTEL_PORT:-43180}
mkdir -p "$OUT"
npm run build >/dev/null
cat >"$OUT/collector.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$PORT
exporters:
  file:
    path: $PWD/$OUT/spans.jsonl
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
YAML
# shellcheck disable=SC2086
node dist/bench/http/run.js --no-write $ARGS | tee "$OUT/off.txt"
otelcol-tstriton --config "$OUT/collector.yaml" >"$OUT/collector.log" 2>&1 &
COLLECTOR=$!
trap 'kill $COLLECTOR 2>/dev/null || true' EXIT
sleep 2
# shellcheck disable=SC2086
TSTRITON_TRACE_CONFIG="mode=opentelemetry;level=TIMESTAMPS;rate=1;opentelemetry,url=http://127.0.0.1:$PORT/v1/traces" \
  node dist/bench/http/run.js --no-write $ARGS | tee "$OUT/on.txt"
echo "spans received: $(grep -o '"spanId"' "$OUT/spans.jsonl" | wc -l)"
