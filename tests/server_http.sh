#!/usr/bin/env bash
# Chapter 10's server over HTTP, driven with curl on stories260K: SSE framing byte for byte,
# [DONE], usage equal streaming and not, a stop string split over two tokens never streamed, a
# multi-byte character split over two tokens held back until whole, greedy output over HTTP
# equal to chapter 01's greedy output, the error object, the API key, the body cap, /metrics
# after the requests, and a clean exit 0 on SIGTERM. Binds 127.0.0.1 on a free port; every
# step is bounded in time and the server is stopped on any exit.
# Usage: tests/server_http.sh BIN_DIR   (holding ch10_serving and ch01_naive_loop)
set -euo pipefail
bin="$1"
model="${INFERLAB_MODELS:-models}/stories260K.bin"
if [ ! -f "$model" ]; then
  if [ "${INFERLAB_REQUIRE_MODELS:-}" = 1 ]; then echo "FAIL: $model missing"; exit 1; fi
  echo "SKIPPED: $model not found (set INFERLAB_MODELS)"; exit 77
fi
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/setup.sh)"; exit 1; }
done

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid"; fi
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
check() {  # check NAME CONDITION-STATUS
  if [ "$2" -eq 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

timeout 120 "$bin/ch10_serving" --model "$model" --threads 1 --port 0 --api-key sekret \
  --model-name stories --max-body 0.01 > "$work/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 100); do
  port="$(grep -o '127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f2 || true)"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: the server printed no address"; cat "$work/server.log"; exit 1; }
url="http://127.0.0.1:$port"
for _ in $(seq 300); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/health")" = 200 ] && break
  sleep 0.1
done
auth=(-H "Authorization: Bearer sekret" -H "Content-Type: application/json")
post() {  # post PATH JSON -> body on stdout
  curl -sS --max-time 60 "${auth[@]}" "$url$1" -d "$2"
}

# SSE framing, byte for byte (id and created vary from run to run: normalised).
post /v1/completions '{"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0,
  "stream": true, "stream_options": {"include_usage": true}}' > "$work/stream.txt"
sed -E 's/"created":[0-9]+/"created":0/; s/"id":"cmpl-[0-9a-f]+"/"id":"ID"/' "$work/stream.txt" \
  > "$work/stream.norm"
{
  for t in ',' ' there' ' was' ' a'; do
    printf 'data: {"choices":[{"finish_reason":null,"index":0,"logprobs":null,"text":"%s"}],' "$t"
    printf '"created":0,"id":"ID","model":"stories","object":"text_completion","usage":null}\n\n'
  done
  printf 'data: {"choices":[{"finish_reason":"length","index":0,"logprobs":null,"text":""}],'
  printf '"created":0,"id":"ID","model":"stories","object":"text_completion","usage":null}\n\n'
  printf 'data: {"choices":[],"created":0,"id":"ID","model":"stories","object":"text_completion",'
  printf '"usage":{"completion_tokens":4,"prompt_tokens":5,"total_tokens":9}}\n\n'
  printf 'data: [DONE]\n\n'
} > "$work/expected.txt"
cmp -s "$work/stream.norm" "$work/expected.txt"
check "SSE framing byte for byte, [DONE] last" $?
cmp -s "$work/stream.norm" "$work/expected.txt" ||
  diff "$work/expected.txt" "$work/stream.norm" || true

# Chat streaming: a role delta first, the same text and usage as the whole response.
chat='{"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 24,
  "temperature": 0.8, "seed": 7, "n": 2'
streaming='"stream": true, "stream_options": {"include_usage": true}}'
post /v1/chat/completions "$chat, $streaming" > "$work/chat_stream.txt"
post /v1/chat/completions "$chat}" > "$work/chat.json"
events="$(grep '^data: {' "$work/chat_stream.txt" | sed 's/^data: //')"
first_role="$(echo "$events" | head -1 | jq -r '.choices[0].delta.role')"
[ "$first_role" = assistant ]
check "chat stream: the first delta carries the role" $?
for i in 0 1; do
  streamed="$(echo "$events" |
    jq -j "select(.choices[0].index == $i) | .choices[0].delta.content // \"\"")"
  whole="$(jq -j ".choices[$i].message.content" "$work/chat.json")"
  [ "$streamed" = "$whole" ]
  check "chat choice $i: streamed text equals the whole response's (same seed)" $?
done
usage_stream="$(echo "$events" | jq -c 'select(.choices == []) | .usage')"
usage_whole="$(jq -c .usage "$work/chat.json")"
[ -n "$usage_stream" ] && [ "$usage_stream" = "$usage_whole" ]
check "usage streamed ($usage_stream) equals usage whole ($usage_whole)" $?
[ "$(tail -c 14 "$work/chat_stream.txt" | od -An -c | tr -d ' \n')" = 'data:[DONE]\n\n' ]
check "chat stream ends with data: [DONE]" $?

# A stop string split over two tokens (" g" "ir" "l" in greedy's "a little girl"): the text
# ends before it, finish_reason is stop, and no chunk carries any part of it.
stop='{"prompt": "Once upon a time", "max_tokens": 30, "temperature": 0, "stop": ["irl"]'
post /v1/completions "$stop}" > "$work/stop.json"
[ "$(jq -r '.choices[0].text' "$work/stop.json")" = ", there was a little g" ] &&
  [ "$(jq -r '.choices[0].finish_reason' "$work/stop.json")" = stop ]
check "stop string across tokens: text ends before it, finish_reason stop" $?
post /v1/completions "$stop, \"stream\": true}" > "$work/stop_stream.txt"
streamed="$(grep '^data: {' "$work/stop_stream.txt" | sed 's/^data: //' | jq -j '.choices[0].text')"
[ "$streamed" = ", there was a little g" ] && ! grep -q '"text":"ir' "$work/stop_stream.txt"
check "stop string across tokens: never streamed" $?

# A multi-byte character split over tokens: this vocabulary writes "ö" as its two bytes C3 B6
# (two byte tokens); a regex makes the model write it. The stream sends it whole, never half.
utf8='{"prompt": "Once", "max_tokens": 12, "temperature": 0, "regex": "schön"'
post /v1/completions "$utf8, \"logprobs\": 0}" > "$work/utf8.json"
halves="$(jq -c '[.choices[0].logprobs.tokens[] | select(. == "\ufffd")] | length' \
  "$work/utf8.json")"
[ "$halves" = 2 ]
check "precondition: ö was generated as two byte tokens ($halves halves)" $?
post /v1/completions "$utf8, \"stream\": true}" > "$work/utf8.txt"
texts="$(grep '^data: {' "$work/utf8.txt" | sed 's/^data: //' | jq -c '.choices[0].text')"
[ "$(echo "$texts" | jq -j .)" = "schön" ] && ! grep -q $'\xEF\xBF\xBD' "$work/utf8.txt" &&
  echo "$texts" | grep -q 'ö'
check "multi-byte character across tokens: sent whole ($(echo $texts | tr '\n' ' '))" $?

# Greedy over HTTP equals chapter 01's greedy output for the same prompt (64 positions: BOS +
# 4 prompt tokens + 60 generated, or fewer if the story ends).
timeout 60 "$bin/ch01_naive_loop" --model "$model" --threads 1 --prompt "Once upon a time" \
  --temperature 0 --steps 64 --reps 1 --json > "$work/ch01.json"
http_text="$(post /v1/completions \
  '{"prompt": "Once upon a time", "max_tokens": 60, "temperature": 0}' |
  jq -j '.choices[0].text')"
[ "Once upon a time$http_text" = "$(jq -j .text "$work/ch01.json")" ]
check "greedy over HTTP equals chapter 01's greedy text" $?

# Errors: OpenAI's object and status; the API key on every route but /health; the body cap.
code="$(curl -s -o "$work/err.json" -w '%{http_code}' --max-time 10 "${auth[@]}" \
  "$url/v1/completions" -d '{"prompt": "x", "temperature": "hot"}')"
[ "$code" = 400 ] && [ "$(jq -r .error.param "$work/err.json")" = temperature ] &&
  [ "$(jq -r .error.type "$work/err.json")" = invalid_request_error ]
check "a wrong type is a 400 naming the param" $?
code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "${auth[@]}" \
  "$url/v1/completions" -d '{"prompt":')"
[ "$code" = 400 ]
check "malformed JSON is a 400" $?
printf '%*s' 5000 '' | tr ' ' '[' > "$work/deep.json"
code="$(curl -s -o "$work/deep_err.json" -w '%{http_code}' --max-time 10 "${auth[@]}" \
  "$url/v1/completions" --data-binary @"$work/deep.json")"
[ "$code" = 400 ] && grep -q 'deeper' "$work/deep_err.json"
check "JSON nested 5000 deep is a 400 ($(jq -r .error.message "$work/deep_err.json"))" $?
code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url/v1/models")"
health="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$url/health")"
[ "$code" = 401 ] && [ "$health" = 200 ]
check "no API key: 401, except /health" $?
head -c 20000 /dev/zero | tr '\0' 'a' > "$work/big.txt"
code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "${auth[@]}" "$url/v1/completions" \
  --data-binary @"$work/big.txt")"
[ "$code" = 413 ]
check "a body over --max-body is a 413 ($code)" $?

# After all of it: nothing running, no KV block held.
metrics="$(curl -s --max-time 10 -H "Authorization: Bearer sekret" "$url/metrics")"
echo "$metrics" | grep -q '^inferlab:num_requests_running{model_name="stories"} 0$' &&
  echo "$metrics" | grep -q '^inferlab:kv_blocks_used{model_name="stories"} 0$'
check "/metrics: zero running, zero KV blocks used" $?

kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=""
[ "$status" = 0 ]
check "SIGTERM: exit 0 ($status)" $?
echo "server_http: $failures failed"
[ "$failures" = 0 ]
