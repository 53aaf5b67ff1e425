#!/usr/bin/env bash
# Chapter 10 under faults and load: ch10_serving on a free 127.0.0.1 port (a small synthetic
# model, greedy), driven by bench_serving and curl. Bounded: 200 requests of at most 40 tokens
# per phase, every wait has a deadline, the servers are stopped on exit.
#  1. solo: the 200 requests one at a time (--max-concurrency 1), the reference texts;
#  2. chaos: the 200 at once, a random third hang up at random points (some before their first
#     token, while queued); afterwards /metrics shows no running or waiting request and no KV
#     block in use, and every completed text equals its solo text (greedy, batch-invariant);
#  3. back-pressure: a server with 2 slots and a queue of 4 gets the 200 at once: some get 429,
#     none fails, completed + rejected = 200, the completed texts equal the solo ones, and the
#     server's counters agree (request_rejected_total = the 429s, request_success_total = the
#     completed: no request lost or served twice);
#  4. hostile clients: malformed JSON, a wrong content type, a 100 MB body get a 4xx with an
#     OpenAI error object; a client that sends a streaming request and never reads holds only
#     its own request (others are served meanwhile) and is cancelled when it goes away;
#  5. the server still serves, and SIGTERM stops it with exit code 0.
# Usage: serving_faults.sh BIN_DIR   (BIN_DIR holds ch10_serving and bench_serving)
set -euo pipefail

bin=${1:?usage: serving_faults.sh BIN_DIR}
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/server.log" ] && tail -20 "$work/server.log" >&2
  exit 1
}

# Starts ch10_serving with the extra flags given, on a free port: sets $server_pid and $url.
start_server() {
  "$bin/ch10_serving" --synthetic stories260K --threads 1 --host 127.0.0.1 --port 0 \
    --http-threads 224 "$@" >"$work/server.log" 2>&1 &
  server_pid=$!
  local port=""
  for _ in $(seq 1 300); do  # 30 s for the port line
    port=$(sed -n 's|.*serving on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/server.log")
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || fail "ch10_serving exited at start"
    sleep 0.1
  done
  [ -n "$port" ] || fail "ch10_serving printed no port"
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 300); do  # 30 s to load
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/health")" = 200 ] && return
    sleep 0.1
  done
  fail "GET /health never answered 200"
}

stop_server() {
  kill -TERM "$server_pid"
  local rc=0
  wait "$server_pid" || rc=$?
  server_pid=""
  [ "$rc" = 0 ] || fail "ch10_serving exited with $rc on SIGTERM"
}

# The value of Prometheus metric $1 (summed over its label sets) at /metrics.
metric() {
  curl -s --max-time 5 "$url/metrics" |
    awk -v name="inferlab:$1" '$1 == name || index($1, name "{") == 1 { s += $NF }
                                END { print s + 0 }'
}

# Waits (5 s at most) until no request runs or waits and no KV block is in use.
expect_idle() {
  local running waiting used
  for _ in $(seq 1 50); do
    running=$(metric num_requests_running)
    waiting=$(metric num_requests_waiting)
    used=$(metric kv_blocks_used)
    [ "$running" = 0 ] && [ "$waiting" = 0 ] && [ "$used" = 0 ] && return
    sleep 0.1
  done
  fail "$1: after the clients left, $running running, $waiting waiting, $used KV blocks used"
}

# bench_serving's JSON field $2 of file $1.
field() { jq -r ".$2" "$1"; }

# Arrivals 5 ms apart on average, not all at t = 0: the 200 still overlap (a server of 8 slots
# queues most of them), but their connects do not all hit the listen backlog at once.
workload=(--requests 200 --rate 200 --prompt-lens uniform:4:48 --output-lens uniform:100:300
          --workload-seed 3 --temperature 0 --timeout 120)

echo "== 1. solo run (reference texts)"
start_server --max-seqs 8 --max-queue 256 --cache off
"$bin/bench_serving" --base-url "$url" "${workload[@]}" --max-concurrency 1 --json \
  --per-request >"$work/solo.json" || fail "the solo run failed"
[ "$(field "$work/solo.json" completed)" = 200 ] || fail "solo: not all 200 completed"

echo "== 2. 200 concurrent streams, a random third hang up"
"$bin/bench_serving" --base-url "$url" "${workload[@]}" --disconnect-fraction 0.3333 \
  --fault-seed 11 --expect "$work/solo.json" --json --per-request >"$work/chaos.json" ||
  fail "chaos: completed texts differ from the solo run: $(jq -c .text_mismatches \
        "$work/chaos.json")"
completed=$(field "$work/chaos.json" completed)
gone=$(field "$work/chaos.json" disconnected)
peak=$(field "$work/chaos.json" max_concurrent_requests)
echo "   completed $completed, hung up $gone, failed $(field "$work/chaos.json" failed)," \
  "$peak in flight at once"
errors() { jq -c '[.requests[] | select(.outcome == "failed") | .error][0:3]' "$1"; }
[ "$(field "$work/chaos.json" failed)" = 0 ] || fail "chaos: failures $(errors "$work/chaos.json")"
[ "$((completed + gone))" = 200 ] || fail "chaos: $completed completed + $gone hung up != 200"
[ "$gone" -ge 40 ] && [ "$gone" -le 95 ] || fail "chaos: $gone hung up, not about a third"
expect_idle "chaos"
stop_server

echo "== 3. a full queue answers 429, nothing lost or served twice"
start_server --max-seqs 2 --max-queue 4 --cache off
"$bin/bench_serving" --base-url "$url" "${workload[@]}" --expect "$work/solo.json" --json \
  --per-request >"$work/full.json" || fail "full queue: completed texts differ from the solo run"
completed=$(field "$work/full.json" completed)
rejected=$(field "$work/full.json" rejected)
echo "   completed $completed, rejected $rejected, failed $(field "$work/full.json" failed)"
[ "$(field "$work/full.json" failed)" = 0 ] ||
  fail "full queue: failures $(errors "$work/full.json")"
[ "$rejected" -gt 0 ] || fail "full queue: no 429"
[ "$((completed + rejected))" = 200 ] || fail "full queue: $completed + $rejected != 200"
[ "$(metric request_rejected_total)" = "$rejected" ] ||
  fail "full queue: server $(metric request_rejected_total) rejections, client $rejected"
[ "$(metric request_success_total)" = "$completed" ] ||
  fail "full queue: server $(metric request_success_total) finished, client $completed"
expect_idle "full queue"
retry=$(jq -r '[.requests[] | select(.outcome == "rejected")][0].http_status' "$work/full.json")
[ "$retry" = 429 ] || [ "$retry" = 503 ] || fail "full queue: rejected with HTTP $retry"
stop_server

echo "== 4. hostile clients"
start_server --max-seqs 4 --max-queue 16 --cache off --max-body 1
post() {  # post CONTENT_TYPE BODY_FILE -> "STATUS BODY"
  curl -s --max-time 30 -o "$work/reply" -w '%{http_code}' -H "Content-Type: $1" \
    --data-binary "@$2" "$url/v1/completions" || true
}
printf '{"prompt": "Once", "max_tokens": 4' >"$work/bad.json"
code=$(post application/json "$work/bad.json")
[ "$code" = 400 ] && jq -e '.error.message' "$work/reply" >/dev/null ||
  fail "malformed JSON: HTTP $code $(head -c 200 "$work/reply")"
printf '{"prompt": "Once", "max_tokens": 4}' >"$work/ok.json"
code=$(post text/plain "$work/ok.json")
case "$code" in 4??) ;; *) fail "wrong content type: HTTP $code" ;; esac
head -c 104857600 /dev/zero | tr '\0' ' ' >"$work/huge.json"
code=$(post application/json "$work/huge.json")
rm -f "$work/huge.json"
[ "$code" = 413 ] || fail "100 MB body: HTTP $code (expected 413)"
# A slow client: a streaming request of 2,000 tokens, then it never reads its socket.
exec 3<>"/dev/tcp/127.0.0.1/${url##*:}"
slow='{"prompt": [5, 6, 7], "max_tokens": 2000, "stream": true, "ignore_eos": true}'
printf 'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n%s\r\n\r\n%s' \
  "Content-Type: application/json" "Content-Length: ${#slow}" "$slow" >&3
code=$(post application/json "$work/ok.json")  # served while the slow client holds its slot
[ "$code" = 200 ] || fail "a request beside the slow client: HTTP $code"
exec 3<&- 3>&-  # the slow client goes away: its request is cancelled
expect_idle "slow client"

echo "== 5. still serving"
code=$(post application/json "$work/ok.json")
[ "$code" = 200 ] && jq -e '.choices[0].text' "$work/reply" >/dev/null ||
  fail "after the faults: HTTP $code"
stop_server
echo "serving_faults: all checks passed"
