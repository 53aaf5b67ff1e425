#!/usr/bin/env bash
# Hostile inputs, table-driven: every binary that takes a flag or a file is run with the values
# and files an adversarial user would try (numbers at 0, -1, INT_MAX, NaN, Inf; a FIFO with no
# writer, a directory, /dev/zero and a symlink loop for every file flag; broken traces and
# models; outputs that cannot be written), and each run must end as the table says:
#   reject: exit code 1 (a bad input found after parsing) or 2 (a bad flag, found while parsing;
#           the numeric rows accept either, as a bound such as the context is known only later),
#           exactly one line on stderr starting "error:" and matching the expected text, nothing
#           on stdout (the check came before any work), within the time limit (no hang);
#   ok:     exit code 0.
# After every run the work folder must hold exactly the fixtures it held before: no output file,
# partial or whole, and no temporary file, is left behind by a run that failed.
#
# Usage: hostile_inputs.sh BIN_DIR    (the build's bin/ folder)
# The rows that need the real stories260K model or tokenizers run only when $INFERLAB_MODELS
# holds them (they are SKIPPED otherwise, and fail when INFERLAB_REQUIRE_MODELS=1).
set -u
bin="$1"
models="${INFERLAB_MODELS:-}"
work="$(mktemp -d "${TMPDIR:-/tmp}/inferlab_hostile.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# --- fixtures ---------------------------------------------------------------------------------
mkfifo fifo
mkdir dir
: > empty_text.txt
ln -s loop_a loop_b && ln -s loop_b loop_a
int32() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
{ for v in 64 172 5 8 4 -2147483648 512; do int32 "$v"; done; } > vocab_int_min.bin
workload_file() { printf '%s\n' "$2" > "$1.jsonl"; }
workload_file max_tokens_wraps '{"prompt_len": 8, "max_tokens": 4294967304}'
workload_file prompt_len_wraps '{"prompt_len": 4294967297, "max_tokens": 4}'
workload_file top_k_wraps '{"prompt_len": 8, "max_tokens": 4, "top_k": 4294967297}'
workload_file top_k_negative_wraps '{"prompt_len": 8, "max_tokens": 4, "top_k": -4294967297}'
workload_file max_tokens_float '{"prompt_len": 8, "max_tokens": 1e12}'
workload_file seed_max '{"prompt_len": 8, "max_tokens": 2, "seed": 18446744073709551615}'
workload_file seed_above '{"prompt_len": 8, "max_tokens": 2, "seed": 18446744073709551616}'
workload_file arrival_day '{"arrival": 1e5, "prompt_len": 8, "max_tokens": 4}'
workload_file arrival_huge '{"arrival": 1e308, "prompt_len": 8, "max_tokens": 4}'
workload_file arrival_hour '{"arrival": 4000, "prompt_len": 8, "max_tokens": 4}'
workload_file arrival_negative '{"arrival": -1, "prompt_len": 8, "max_tokens": 4}'
workload_file prompt_empty '{"prompt": "", "max_tokens": 4}'
workload_file prompt_ids_empty '{"prompt_ids": [], "max_tokens": 4}'
workload_file prompt_ids_negative '{"prompt_ids": [3, -4294967297], "max_tokens": 4}'
workload_file prompt_ids_vocab '{"prompt_ids": [3, 600], "max_tokens": 4}'
workload_file parent_self '{"prompt_ids": [3], "max_tokens": 4, "parent": 0}'
printf '%s\n' '{"prompt_ids": [3], "max_tokens": 4}' '{"prompt_ids": [3], "max_tokens": 4, "parent": 2}' > parent_ahead.jsonl
printf '%s\n' '{"prompt_len": 200, "max_tokens": 300}' '{"prompt_len": 20, "max_tokens": 4, "parent": 0}' > chat_too_long.jsonl
workload_file temperature_overflow '{"prompt_len": 8, "max_tokens": 4, "temperature": 1e999}'
long_prompt="$(head -c 90000 /dev/zero | tr '\0' 'a')"
workload_file long_prompt "{\"prompt\": \"$long_prompt\", \"max_tokens\": 4}"
{ printf '{"prompt": "'; head -c 1100000 /dev/zero | tr '\0' 'a'; printf '", "max_tokens": 4}\n'; } > long_line.jsonl
workload_file empty_prompt '{"prompt": "", "max_tokens": 4}'
workload_file ids_over_context "{\"prompt_ids\": [$(seq -s, 3 602)], \"max_tokens\": 4}"
workload_file parent_forward '{"prompt_ids": [5, 6], "max_tokens": 4, "parent": 1}
{"prompt_ids": [7, 8], "max_tokens": 4}'
printf 'hello\n' > text.txt
fixtures="$(ls -A | sort)"

pass=0 fail=0 skip=0
note_fail() { echo "FAIL: $*"; fail=$((fail + 1)); }

# check EXPECT RC_OR_DASH PATTERN CMD...   EXPECT: reject or ok; PATTERN: a grep -E regex.
check() {
  local expect="$1" want_rc="$2" pattern="$3"
  shift 3
  local label="$*"
  timeout 60 "$@" > "$work/.stdout" 2> "$work/.stderr" < /dev/null
  local rc=$?
  local out err lines
  out="$(cat "$work/.stdout")"
  err="$(cat "$work/.stderr")"
  lines="$(grep -c . "$work/.stderr")"
  rm -f "$work/.stdout" "$work/.stderr"
  local now
  now="$(ls -A | sort)"
  if [ "$now" != "$fixtures" ]; then
    local extra
    extra="$(comm -13 <(echo "$fixtures") <(echo "$now"))"
    note_fail "$label: left files behind: $(echo "$extra" | tr '\n' ' ')"
    echo "$extra" | while read -r f; do [ -n "$f" ] && rm -rf -- "$f"; done
    return
  fi
  if [ "$rc" -eq 124 ]; then note_fail "$label: still running after 60 s (a hang)"; return; fi
  if [ "$rc" -gt 128 ]; then note_fail "$label: killed by signal $((rc - 128)): $err"; return; fi
  if [ "$expect" = ok ]; then
    if [ "$rc" -ne 0 ]; then note_fail "$label: expected success, got exit $rc: $err"; return; fi
  else
    if [ "$rc" -ne "${want_rc%%|*}" ] && [ "$rc" -ne "${want_rc##*|}" ]; then note_fail "$label: expected exit $want_rc, got $rc: $err"; return; fi
    if [ "$lines" -ne 1 ]; then note_fail "$label: expected one line on stderr, got $lines: $err"; return; fi
    case "$err" in error:*) ;; *) note_fail "$label: stderr does not start with 'error:': $err"; return;; esac
    if ! printf '%s' "$err" | grep -Eq -- "$pattern"; then
      note_fail "$label: message does not match /$pattern/: $err"; return
    fi
    if [ -n "$out" ]; then note_fail "$label: printed before refusing (work started): ${out:0:200}"; return; fi
  fi
  pass=$((pass + 1))
}

ch01="$bin/ch01_naive_loop"; ch02="$bin/ch02_kv_cache"; ch03="$bin/ch03_roofline"
ch04="$bin/ch04_continuous_batching"; tok=("$bin/inferlab_tokenize")
bf=("$bin/bench_forward"); bk=("$bin/bench_kv_cache")
# Quick, valid base commands: a flag value the table accepts must run to completion with them.
# 24 steps leave room for the default prompt whatever tokenizer a synthetic model gets (14
# tokens with the byte fallback used when no tokenizer file is found, fewer with tok512).
q01=("$ch01" --synthetic stories260K --steps 24 --threads 1)
q02=("$ch02" --synthetic stories260K --steps 24 --reps 1 --threads 1)
q03=("$ch03" --config llama3-8b --hardware h100-sxm)
q04=("$ch04" --synthetic stories260K --threads 1 --requests 3 --max-prompt 8 --max-output 4
     --max-seqs 2 --policy continuous)
q04t=("$ch04" --synthetic stories260K --threads 1 --policy continuous --json)

# --- every numeric flag at 0, -1, INT_MAX, NaN and Inf -------------------------------------------
# numeric BASE_ARRAY FLAG ACCEPTED...: the values listed after the flag must be accepted (run with
# the base command, less its own setting of the flag), the others refused with a message naming
# the flag. A value written skip:V is accepted but not run here (a benchmark's run takes minutes).
numeric() {
  local -n base_ref="$1"
  local flag="$2"
  shift 2
  local accepted=" $* "
  local base=() i
  for ((i = 0; i < ${#base_ref[@]}; ++i)); do
    if [ "${base_ref[i]}" = "$flag" ]; then i=$((i + 1)); else base+=("${base_ref[i]}"); fi
  done
  for v in 0 -1 2147483647 nan inf; do
    if [[ "$accepted" == *" $v "* ]]; then
      check ok 0 "" "${base[@]}" "$flag" "$v"
    elif [[ "$accepted" == *" skip:$v "* ]]; then
      : # accepted, too slow to run here
    else
      check reject "2|1" "^error: ${flag}[: ]" "${base[@]}" "$flag" "$v"
    fi
  done
}
for b in q01 q02; do
  [ "$b" = q01 ] || numeric "$b" --steps 0
  numeric "$b" --temperature 0 2147483647
  numeric "$b" --top-k 0 2147483647
  numeric "$b" --top-p
  numeric "$b" --min-p 0
  numeric "$b" --repetition-penalty 2147483647
  numeric "$b" --frequency-penalty 0 -1 2147483647
  numeric "$b" --presence-penalty 0 -1 2147483647
  numeric "$b" --seed 0 2147483647
  numeric "$b" --threads 0
done
numeric q01 --steps skip:0  # the whole context through the naive loop: too slow here
numeric q02 --reps
q02k=("${q02[@]}" --kv-calc llama3-8b)
numeric q02k --kv-context
numeric q03 --batch
numeric q03 --prompt-tokens
numeric q03 --context 0
numeric q03 --utilisation
q03t=("$ch03" --hardware this --quick)
numeric q03t --threads skip:0
numeric q04 --temperature 0 2147483647
numeric q04 --seed 0 2147483647
numeric q04 --threads 0
numeric q04 --rate 0
numeric q04 --requests
numeric q04 --max-prompt
numeric q04 --max-output
numeric q04 --max-batched-tokens
numeric q04 --max-seqs
numeric q04 --slo-ttft
numeric q04 --slo-tpot
numeric q04 --workload-seed 0 2147483647
numeric q04 --tenants
q04sp=("${q04[@]}" --workload shared-prefix)
numeric q04sp --prefixes
numeric q04sp --prefix-len
numeric q04sp --shared-fraction 0
q04mt=("${q04[@]}" --workload multi-turn)
numeric q04mt --prefix-len 0
numeric q04mt --turns
numeric q04mt --think-time 0
numeric q04mt --max-conversation
q04rag=("${q04[@]}" --workload rag)
numeric q04rag --docs
numeric q04rag --doc-len
q04s=("${q04[@]}" --sweep)
numeric q04s --sweep-context
numeric q04s --sweep-steps
numeric bf --threads skip:0
numeric bf --steps
numeric bf --reps
numeric bk --threads skip:0
numeric bk --prompt
numeric bk --decode
numeric bk --lengths

# --- every file flag with a FIFO, a directory, /dev/zero and a symlink loop ---------------------
files() {
  local -n base="$1"
  local flag="$2"
  check reject 1 "FIFO" "${base[@]}" "$flag" fifo
  check reject 1 "directory" "${base[@]}" "$flag" dir
  check reject 1 "character device" "${base[@]}" "$flag" /dev/zero
  check reject 1 "symlink loop" "${base[@]}" "$flag" loop_a
  check reject 1 "not found" "${base[@]}" "$flag" ./missing.bin
}
m01=("$ch01" --steps 8); files m01 --model
m02=("$ch02" --steps 8); files m02 --model
m04=("$ch04" --requests 2); files m04 --model
s01=("$ch01" --synthetic stories260K --steps 8); files s01 --tokenizer
s04=("$ch04" --synthetic stories260K --requests 2); files s04 --tokenizer
files q04t --workload-file
files tok --tokenizer
files bf --model

# --- every output flag: refused before the run, and never left half-written -------------------
outputs() {
  local -n base="$1"
  local flag="$2"
  check reject 1 "${flag} .*directory" "${base[@]}" "$flag" dir
  check reject 1 "${flag} .*FIFO" "${base[@]}" "$flag" fifo
  check reject 1 "${flag} .*character device" "${base[@]}" "$flag" /dev/zero
  check reject 1 "${flag} .*symlink loop" "${base[@]}" "$flag" loop_a
  check reject 1 "${flag} .*no_such_folder.* not found" "${base[@]}" "$flag" no_such_folder/out
  # A write that fails partway (the file-size limit): an error, and no file at all.
  local named="$flag"
  [ "$flag" = --plot ] && named="(--plot|plot file)"
  check reject 1 "${named} .*write failed" bash -c 'ulimit -f 1; exec "$@" > /dev/null' - "${base[@]}" --json "$flag" out.file
}
outputs q01 --dump-logits
outputs q02 --dump-logits
outputs q02 --plot
outputs q03 --plot
outputs q04 --perfetto
outputs q04 --plot

# --- the cases of the issue ---------------------------------------------------------------------
check reject 1 "max_tokens.*4294967304 is outside \[1, 2147483647\]" "${q04t[@]}" --workload-file max_tokens_wraps.jsonl
check reject 1 "prompt_len.*4294967297 is outside \[1, 2147483647\]" "${q04t[@]}" --workload-file prompt_len_wraps.jsonl
check reject 1 "top_k.*4294967297 is outside \[0, 2147483647\]" "${q04t[@]}" --workload-file top_k_wraps.jsonl
check reject 1 "top_k.*-4294967297 is outside \[0, 2147483647\]" "${q04t[@]}" --workload-file top_k_negative_wraps.jsonl
check reject 1 "max_tokens.*must be an integer" "${q04t[@]}" --workload-file max_tokens_float.jsonl
check ok 0 "" "${q04t[@]}" --trace-file seed_max.jsonl  # the old name of --workload-file still works
check reject 1 "seed_above.jsonl:1: .seed. .*\[0, 18446744073709551615\]" "${q04t[@]}" --workload-file seed_above.jsonl
check reject 1 "arrival.*outside \[0, 86400\]" "${q04t[@]}" --workload-file arrival_day.jsonl
check reject 1 "arrival.*outside \[0, 86400\]" "${q04t[@]}" --workload-file arrival_huge.jsonl
check reject 1 "arrival.*outside \[0, 86400\]" "${q04t[@]}" --clock sim --workload-file arrival_huge.jsonl
check reject 1 "arrives at 4000 s.*up to 3600 s" "${q04t[@]}" --workload-file arrival_hour.jsonl
check reject 1 "arrival.*outside" "${q04t[@]}" --workload-file arrival_negative.jsonl
check reject 1 "temperature_overflow.jsonl:1: .*(temperature|number overflow)" "${q04t[@]}" --workload-file temperature_overflow.jsonl
check reject 1 "long_prompt.jsonl.*request 0: the prompt is [0-9]+ tokens but the context is 512" "${q04t[@]}" --workload-file long_prompt.jsonl
check reject 1 "long_line.jsonl:1: line longer than the limit of 1048576 bytes" "${q04t[@]}" --workload-file long_line.jsonl
check reject 1 "--prompt is [0-9]+ tokens .* only 24 positions" "${q01[@]}" --prompt "$long_prompt"
check reject 1 "--prompt is not valid UTF-8 \(byte 1: 0xFF\)" "${q01[@]}" --json --prompt "$(printf 'a\377b')"
check reject 2 "--model excludes --synthetic" "${q01[@]}" --model x.bin
check reject 2 "--seed: '-1' is not an integer" "${q01[@]}" --seed -1
check reject 2 "--threads: 100000 is outside \[0, [0-9]+\]" "$ch01" --synthetic stories260K --threads 100000
check reject 2 "--seed: '18446744073709551616' is not an integer" "${q01[@]}" --seed 18446744073709551616
check ok 0 "" "${q01[@]}" --seed 18446744073709551615
check reject 1 "--steps 2147483647 exceeds the model's context of 512" "$ch01" --synthetic stories260K --steps 2147483647
# Chat flags that would do nothing in the mode asked for.
check reject 1 "--system applies only with --chat" "$ch01" --synthetic stories260K --system hi
check reject 1 "--reps does not apply to --chat" "$ch01" --synthetic stories260K --chat --chat-template chatml --reps 2
check reject 1 "--dump-logits does not apply to --chat" "$ch01" --synthetic stories260K --chat --chat-template chatml --dump-logits x.txt
check reject 1 "--compare-kv: its built-in prompt .* is [0-9]+ tokens" "$ch02" --synthetic stories260K --compare-kv --steps 3 --prompt ""
check reject 2 "--kv-context requires --kv-calc" "${q02[@]}" --kv-context 4096
check reject 2 "--max-seqs: 2147483647 is outside" "$ch04" --synthetic stories260K --max-seqs 2147483647 --perfetto out.json
check reject 2 "--sweep-context: 2147483647 is outside" "${q04[@]}" --sweep --sweep-context 2147483647
check reject 1 "--sweep-context 1000 \+ --sweep-steps 16 does not fit .* 512" "${q04[@]}" --sweep --sweep-context 1000
check reject 2 "not expected: .*--prompt" "${q04[@]}" --prompt hi
check reject 1 "--hardware applies only to --clock sim" "${q04[@]}" --hardware a100-sxm
check reject 1 "--config applies only to --clock sim" "${q04[@]}" --config llama3-70b
check reject 1 "--sweep .* applies only to --clock real" "${q04[@]}" --clock sim --sweep
check reject 1 "--sweep-steps applies only with --sweep" "${q04[@]}" --sweep-steps 4
check reject 1 "--rate describes a generated workload" "${q04t[@]}" --workload-file seed_max.jsonl --rate 3
check reject 1 "--workload describes a generated workload" "${q04t[@]}" --workload-file seed_max.jsonl --workload rag
check reject 2 "--workload: unknown workload 'chat' \(expected random, shared-prefix, few-shot, multi-turn or rag\)" "${q04[@]}" --workload chat
check reject 1 "--turns applies only to --workload multi-turn, not random" "${q04[@]}" --turns 3
check reject 1 "--prefix-len 600 \(the system prompt\) leaves no room" "${q04mt[@]}" --prefix-len 600
check reject 1 "request 1: continuing request 0 .*: lower --max-conversation to 512" "$ch04" --synthetic stories260K --threads 1 --requests 3 --policy continuous --workload multi-turn --max-conversation 4000 --prompt-lens fixed:200 --output-lens fixed:200
check reject 1 "prompt_empty.jsonl:1: 'prompt' is empty" "${q04t[@]}" --workload-file prompt_empty.jsonl
check reject 1 "prompt_ids_empty.jsonl:1: 'prompt_ids' is empty" "${q04t[@]}" --workload-file prompt_ids_empty.jsonl
check reject 1 "prompt_ids_negative.jsonl:1: 'prompt_ids'\[1\] is -4294967297" "${q04t[@]}" --workload-file prompt_ids_negative.jsonl
check reject 1 "prompt_ids_vocab.jsonl: request 0: prompt token id 600 is outside the vocabulary \[0, 512\)" "${q04t[@]}" --workload-file prompt_ids_vocab.jsonl
check reject 1 "parent_self.jsonl:1: 'parent' 0 is not an earlier request" "${q04t[@]}" --workload-file parent_self.jsonl
check reject 1 "parent_ahead.jsonl:2: 'parent' 2 is not an earlier request" "${q04t[@]}" --workload-file parent_ahead.jsonl
check reject 1 "chat_too_long.jsonl: request 1: continuing request 0 .* 519 tokens in the worst case but the context is 512" "${q04t[@]}" --workload-file chat_too_long.jsonl
check reject 1 "at a rate of 1e-300/s .* after the limit of 86400 s" "${q04[@]}" --clock sim --rate 1e-300
check reject 2 "--utilisation: 1e-320 is outside" "${q03[@]}" --utilisation 1e-320
check reject 1 "--quick applies only to --hardware this" "${q03[@]}" --quick
check reject 1 "model file '/missing.bin' not found" "${bf[@]}" --model /missing.bin
check reject 1 "--prompt 1000 \+ --decode 64 exceeds the context of stories110M" "${bk[@]}" --prompt 1000
check reject 1 "tokenizer file '/dev/zero' is a character device" "${tok[@]}" --tokenizer /dev/zero
check reject 1 "vocab_size = -2147483648" "$ch01" --model vocab_int_min.bin --tokenizer text.txt

# Chapter 06: the prefix cache's own flags, and traces it must refuse.
ch06="$bin/ch06_prefix_cache"
q06=("$ch06" --synthetic stories260K --threads 1 --requests 3 --max-seqs 2)
check reject 1 "a KV budget of [0-9]+ bytes is less than one block" "${q06[@]}" --cache-memory 0.0001
check reject 2 "--cache-memory: 0 is outside" "${q06[@]}" --cache-memory 0
check reject 2 "--cache: lru not in" "${q06[@]}" --cache lru
check reject 2 "--schedule: lpm not in" "${q06[@]}" --schedule lpm
check reject 2 "--kv-dtype: fp8 not in" "${q06[@]}" --kv-dtype fp8
check reject "2|1" "unknown workload 'nonsense'" "${q06[@]}" --workload nonsense
check reject 1 "empty_prompt.jsonl:1: 'prompt' is empty" "$ch06" --synthetic stories260K --workload-file empty_prompt.jsonl
check reject 1 "ids_over_context.jsonl.*(context|512)" "$ch06" --synthetic stories260K --workload-file ids_over_context.jsonl
check reject 1 "parent_forward.jsonl:1: .*parent" "$ch06" --synthetic stories260K --workload-file parent_forward.jsonl
check ok 0 "" "${q06[@]}" --clock sim --json

# Chapter 07: the core's parameter errors, printed as the chapter's flags before any output.
ch07="$bin/ch07_speculative_decoding"
q07=("$ch07" --synthetic stories260K --threads 1 --steps 24)
check reject 1 "--k 0: must be in \[1, 511\]" "${q07[@]}" --k 0
check reject 1 "--exit-layer 9: must be in \[1, 4\]" "${q07[@]}" --exit-layer 9
check reject 1 "--block-size 1000: larger than the model's context" "${q07[@]}" --kv paged --block-size 1000
check reject 1 "--tree-branch 16 --tree-depth 4: 69904 nodes \(at most 4096\)" "${q07[@]}" --tree-branch 16 --tree-depth 4
check reject 2 "--ngram: 0 is outside" "${q07[@]}" --ngram 0
check reject 1 "--acceptance 1.5: must be in \[0, 1\]" "$ch07" --clock sim --acceptance 1.5
check reject 1 "--k 0: must be >= 1" "$ch07" --clock sim --k 0
check reject 1 "--context -1: must be >= 0" "$ch07" --clock sim --context -1
check ok 0 "" "$ch07" --clock sim --json

# --- chapters 05-08 and the MaskBench converter (issue 29) -------------------------------------
ch05="$bin/ch05_paged_attention"; ch08="$bin/ch08_constrained_sampling"
conv=("$bin/inferlab_jsonschema_to_maskbench")
chain() {  # FILE TURNS: one conversation of TURNS turns, one token and one generated each
  local i
  { printf '{"prompt_ids": [5], "max_tokens": 1}\n'
    for ((i = 1; i < $2; ++i)); do printf '{"prompt_ids": [5], "max_tokens": 1, "parent": %d}\n' $((i - 1)); done
  } > "$1"
}
chain chain1000.jsonl 1000
chain chain3000.jsonl 3000
printf 'root ::= "a" [0-9]*\n' > digits.gbnf
printf '{"type": "integer"}\n' > int.schema.json
mkdir -p mb_empty mb/x suite_a/draft suite_b/draft
printf '{"schema": {"type": "integer"}, "tests": [{"data": 1, "valid": true}]}\n' > mb/x/int.json
printf '[{"description": "d", "schema": {"type": "integer"}, "tests": [{"data": 1, "valid": true}]}]\n' > suite_a/draft/type.json
cp suite_a/draft/type.json suite_b/draft/type.json
mkdir -p suite_big/draft
printf '[{"description": "%s", "schema": {"type": "integer"}, "tests": [{"data": 1, "valid": true}]}]\n' "$(head -c 3000 /dev/zero | tr '\0' a)" > suite_big/draft/type.json
printf '[{"schema": {"type": ' > suite_bad.json
{ printf '[{"schema": {"const": '; head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; printf '}, "tests": []}]\n'; } > deep_suite.json
{ printf '{"const": '; head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; printf '}\n'; } > deep.schema.json
printf '{"not": "an array"}\n' > suite_object.json
conv_out="$(mktemp -d "${TMPDIR:-/tmp}/inferlab_hostile_out.XXXXXX")"
trap 'rm -rf "$work" "$conv_out"' EXIT
fixtures="$(ls -A | sort)"

q05=("$ch05" --synthetic stories260K --threads 1 --requests 3 --max-seqs 2 --max-tokens 8)
q05s=("$ch05" --clock sim --requests 20)
q07s=("$ch07" --clock sim)
q08=("$ch08" --synthetic stories260K --threads 1 --steps 16 --json-mode)
numeric q05 --block-size
numeric q05 --n
numeric q05 --kv-memory
q05sw=("${q05[@]}" --allocator paged --preempt swap)
numeric q05sw --swap-memory 0
numeric q06 --block-size
numeric q06 --cache-memory
numeric q07s --acceptance 0
numeric q07s --k
numeric q07s --context 0
numeric q08 --max-whitespace 0 -1

f05=("$ch05" --synthetic stories260K --threads 1); files f05 --workload-file
f06=("$ch06" --synthetic stories260K --threads 1); files f06 --workload-file
m07=("$ch07" --steps 24 --threads 1); files m07 --model
q07d=("${q07[@]}" --proposer draft); files q07d --draft
f08=("$ch08" --synthetic stories260K --threads 1 --steps 16); files f08 --grammar
files f08 --json-schema
m08=("$ch08" --steps 16 --regex a); files m08 --model
check reject 1 "--maskbench 'fifo' is a FIFO" "$ch08" --tokenizer none.bin --maskbench fifo
check reject 1 "--maskbench 'loop_a' is a symlink loop" "$ch08" --tokenizer none.bin --maskbench loop_a
check reject 1 "--maskbench '/dev/zero' is a character device" "$ch08" --tokenizer none.bin --maskbench /dev/zero
check reject 1 "--maskbench 'missing' not found" "$ch08" --tokenizer none.bin --maskbench missing
check reject 1 "--maskbench 'mb_empty': the folder holds no \*.json file" "$ch08" --tokenizer none.bin --maskbench mb_empty
outputs q05 --plot
outputs q06 --plot
outputs q07 --plot
outputs q07s --plot

# Flags that do nothing in the mode chosen: one rule, naming the flag and the mode.
check reject 1 "--block-size applies only with --allocator paged or both, not --allocator contiguous" "${q05[@]}" --allocator contiguous --block-size 32
check reject 1 "--reserve applies only with --allocator contiguous or both, not --allocator paged" "${q05[@]}" --allocator paged --reserve context
check reject 1 "--swap-memory applies only with --preempt swap, not --preempt recompute" "${q05[@]}" --swap-memory 32
check reject 1 "--hardware applies only to --clock sim, not --clock real" "${q05[@]}" --hardware a100-sxm
check reject 1 "--config applies only to --clock sim, not --clock real" "${q05[@]}" --config llama3-70b
check reject 1 "--sweep-block-size applies only to the text report, not --json" "${q05[@]}" --json --sweep-block-size
check reject 2 "not expected: .*--prompt" "${q05[@]}" --prompt hi
check reject 1 "--dump-logits does not apply" "${q05[@]}" --dump-logits x.txt
check reject 1 "--acceptance applies only to --clock sim, not --clock real" "${q07[@]}" --acceptance 0.5
check reject 1 "--context applies only to --clock sim, not --clock real" "${q07[@]}" --context 100
check reject 1 "--block-size applies only with --kv paged, not --kv contiguous" "${q07[@]}" --block-size 513
check reject 1 "--draft applies only with --proposer draft, tree or all, not --proposer ngram" "${q07[@]}" --proposer ngram --draft x.bin
check reject 1 "--tree-branch applies only with --proposer tree or all, not --proposer ngram" "${q07[@]}" --proposer ngram --tree-branch 3
check reject 1 "--exit-layer applies only with --proposer early-exit, tree \(without --draft\) or all, not --proposer ngram" "${q07[@]}" --proposer ngram --exit-layer 2
check reject 1 "--ngram applies only with --proposer ngram or all, not --proposer tree" "${q07[@]}" --proposer tree --ngram 3
check reject 1 "--model applies only to --clock real, not --clock sim" "${q07s[@]}" --model x.bin
check reject 1 "--proposer applies only to --clock real, not --clock sim" "${q07s[@]}" --proposer ngram
check reject 1 "--k applies only to one K of a chain proposer .*, not --sweep-k" "${q07s[@]}" --sweep-k --k 3
check reject 2 "--dump-logits" "${q07[@]}" --dump-logits x.txt
check reject 2 "--dump-logits" "${q08[@]}" --dump-logits x.txt
check reject 1 "--time-limit applies only with --maskbench, not a generation" "${q08[@]}" --time-limit 5
check reject 1 "--cpu-clock applies only with --maskbench" "${q08[@]}" --cpu-clock
check reject 1 "--max-whitespace applies only with --json-schema or --json-mode, not --regex" "$ch08" --synthetic stories260K --regex a --max-whitespace 2
check reject 1 "--regex applies only to a generation, not --maskbench" "$ch08" --tokenizer none.bin --maskbench mb --regex a
check reject 1 "--max-whitespace applies only to a generation, not --maskbench" "$ch08" --tokenizer none.bin --maskbench mb --max-whitespace 2
check reject 2 "--max-whitespace: -2 is outside" "${q08[@]}" --max-whitespace -2
check reject 2 "--time-limit: 0 is outside" "$ch08" --tokenizer none.bin --maskbench mb --time-limit 0

# Errors found before the run header: the run's numbers against the context and the memory.
check reject 1 "--block-size 1000: block size 1000 outside \[1, context = 512\]" "${q05[@]}" --allocator paged --block-size 1000
check reject 1 "--kv-memory too small: a KV budget of [0-9]+ bytes is less than one block" "${q05[@]}" --allocator paged --kv-memory 0.0001
check reject 1 "--kv-memory too small: request 0 needs [0-9]+ KV positions" "${q05[@]}" --allocator contiguous --kv-memory 0.01
check reject 1 "--kv-memory 1e\+08 MiB needs .* more than the" "${q05[@]}" --kv-memory 100000000
check reject 1 "--cache-memory 1e\+08 MiB needs .* more than the" "${q06[@]}" --cache-memory 100000000
check reject 1 "--n 256: each request needs 256 batch slots at once, more than --max-seqs 2" "${q05[@]}" --n 256
check reject 1 "--kv-memory too small: request 0 needs 8192 KV positions" "${q05s[@]}" --reserve context
check reject 1 "ids_over_context.jsonl.*(context|512)" "$ch05" --synthetic stories260K --workload-file ids_over_context.jsonl
check reject 1 "--kv-memory too small: request 1023 \(continuing request 1022: a conversation of up to 2048 tokens\)" "$ch05" --clock sim --allocator paged --kv-memory 512 --workload-file chain3000.jsonl
check reject 1 "--kv-memory too small: request 2047 \(continuing request 2046" "$ch06" --clock sim --workload-file chain3000.jsonl
check ok 0 "" "$ch06" --clock sim --cache radix --json --workload-file chain1000.jsonl
check ok 0 "" "$ch05" --clock sim --allocator paged --kv-memory 512 --json --workload-file chain1000.jsonl
check reject 2 "--prompt-lens: length distribution 'uniform:10:5'" "${q05[@]}" --prompt-lens uniform:10:5
check reject 2 "--output-lens: length distribution 'foo'" "${q06[@]}" --output-lens foo
check reject 1 "--k 2147483647: a round of K \+ 1 positions" "${q07s[@]}" --k 2147483647
check reject 1 "--k 100000: a round of K \+ 1 positions after 1024 cached ones passes the target's context of 8192" "${q07s[@]}" --k 100000
check reject 1 "--context 2000000000: must be below the target's context of 8192" "${q07s[@]}" --context 2000000000
check reject 1 "--grammar 'dir' is a directory" "${f08[@]}" --grammar dir
check ok 0 "" "${f08[@]}" --grammar digits.gbnf --json
check ok 0 "" "${f08[@]}" --json-schema int.schema.json --max-whitespace 0 --json

# The converter: the project's one-line errors, no half-written or colliding outputs.
check reject 2 "^error: .*inputs is required" "${conv[@]}" --out "$conv_out/a"
check reject 2 "^error: .*--out is required" "${conv[@]}" suite_a
check reject 1 "input 'missing.json' not found" "${conv[@]}" --out "$conv_out/a" missing.json
check reject 1 "input 'fifo' is a FIFO" "${conv[@]}" --out "$conv_out/a" fifo
check reject 1 "input '/dev/zero' is a character device" "${conv[@]}" --out "$conv_out/a" /dev/zero
check reject 1 "input 'loop_a' is a symlink loop" "${conv[@]}" --out "$conv_out/a" loop_a
check reject 1 "input 'suite_bad.json': not valid JSON" "${conv[@]}" --out "$conv_out/a" suite_bad.json
check reject 1 "input 'deep_suite.json': arrays and objects nested deeper than the limit of 512" "${conv[@]}" --out "$conv_out/a" deep_suite.json
check reject 1 "input 'mb_empty': the folder holds no" "${conv[@]}" --out "$conv_out/a" mb_empty
check reject 1 "deep.schema.json: arrays and objects nested deeper than the limit of 512" "${f08[@]}" --json-schema deep.schema.json
check reject 1 "input 'suite_object.json'.* array of groups" "${conv[@]}" --out "$conv_out/a" suite_object.json
check reject 1 "inputs 'suite_a/draft/type.json' and 'suite_b/draft/type.json' would both write 'draft-type-00.json'" "${conv[@]}" --out "$conv_out/a" suite_a suite_b
check reject 1 "--out '/dev/full' exists and is not a folder" "${conv[@]}" --out /dev/full suite_a
check reject 1 "--out 'no_such_folder/out'.*not found" "${conv[@]}" --out no_such_folder/out suite_a
check reject 1 "--out 'loop_a'.*symlink loop" "${conv[@]}" --out loop_a suite_a
check reject 1 "--out .*write failed" bash -c 'ulimit -f 1; exec "$@" > /dev/null' - "${conv[@]}" --out out.d suite_big
check ok 0 "" "${conv[@]}" --out "$conv_out/a" suite_a/draft/type.json
[ -f "$conv_out/a/draft-type-00.json" ] || note_fail "converter: draft-type-00.json not written"
(cd suite_a/draft && "${conv[@]}" --out "$conv_out/b" type.json > /dev/null) && [ -f "$conv_out/b/draft-type-00.json" ] || note_fail "converter: a file named without its folder is not named after it"

# Allocation sizes are checked before trying (a limit on the address space makes this
# deterministic; sanitizer builds reserve terabytes of address space, so they skip it).
if ldd "$ch01" 2>/dev/null | grep -q libasan; then
  echo "SKIPPED (sanitizer build): the address-space-limit rows"; skip=$((skip + 1))
else
  check reject 1 "synthetic model .*llama2-7b.* needs [0-9.]+ GB .* more than the [0-9.]+ GB" \
    bash -c 'ulimit -v 4000000; exec "$@"' - "$ch01" --synthetic llama2-7b
fi

# GGUF models: a valid small file written by the core, then broken copies; each is refused at
# load with one line naming the file (the format is told by the magic, not the name).
"$bin/bench_cpu_roofline" --synthetic stories260K --save-model good.gguf > /dev/null
gguf_size=$(stat -c %s good.gguf)
head -c 20 good.gguf > gguf_short_header.gguf
head -c 200 good.gguf > gguf_cut_metadata.gguf
head -c $((gguf_size - 4)) good.gguf > gguf_cut_tensor.gguf
patch_bytes() {  # FILE OFFSET PRINTF-BYTES: overwrite bytes in place
  printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
cp good.gguf gguf_version1.gguf && patch_bytes gguf_version1.gguf 4 '\001\000\000\000'
cp good.gguf gguf_huge_count.gguf && patch_bytes gguf_huge_count.gguf 16 '\377\377\377\377\377\377\377\377'
perl -0777 -pe 's/(general\.architecture.{12})llama/${1}qwen2/s' good.gguf > gguf_qwen2.gguf
perl -0777 -pe 's/(token_embd\.weight\x02\0\0\0.{16})\0\0\0\0/${1}\x0d\0\0\0/s' good.gguf > gguf_q5k.gguf
perl -0777 -pe 's/llama\.block_count/llama.block_coun_/' good.gguf > gguf_no_layers.gguf
perl -0777 -pe 's/output_norm\.weight/output_norm.weighX/' good.gguf > gguf_no_norm.gguf
perl -0777 -pe 's/(llama\.feed_forward_length\x04\0\0\0)\xac\0\0\0/${1}\xad\0\0\0/s' good.gguf > gguf_shape.gguf
fixtures="$(ls -A | sort)"
check reject 1 "gguf_short_header.gguf.*shorter than the 24-byte GGUF header" "$ch01" --model gguf_short_header.gguf
check reject 1 "gguf_cut_metadata.gguf.*(truncated|more than the)" "$ch01" --model gguf_cut_metadata.gguf
check reject 1 "gguf_cut_tensor.gguf.*tensor 'output_norm.weight' .* runs past the end of the file" "$ch01" --model gguf_cut_tensor.gguf
check reject 1 "gguf_version1.gguf.*GGUF version 1 is not supported" "$ch01" --model gguf_version1.gguf
check reject 1 "gguf_huge_count.gguf.*announces 18446744073709551615 metadata entries" "$ch01" --model gguf_huge_count.gguf
check reject 1 "gguf_qwen2.gguf.*architecture 'qwen2' is not supported \(supported: llama\)" "$ch01" --model gguf_qwen2.gguf
check reject 1 "gguf_q5k.gguf.*tensor 'token_embd.weight' has type Q5_K" "$ch01" --model gguf_q5k.gguf
check reject 1 "gguf_no_layers.gguf.*'llama.block_count' is missing" "$ch01" --model gguf_no_layers.gguf
check reject 1 "gguf_no_norm.gguf.*tensor 'output_norm.weight' is missing" "$ch01" --model gguf_no_norm.gguf
check reject 1 "gguf_shape.gguf.*tensor 'blk.0.ffn_gate.weight' is \[64, 172\] F32, but the metadata implies \[64, 173\]" "$ch01" --model gguf_shape.gguf

# --- --weights (issue 26, weight storage): an unknown format, rows that are not whole blocks,
# a format the device cannot run (a NaN block scale in a file: tests/test_weight_storage.cpp) ----
check reject 1 "--weights q3_k: unknown weight format \(known: file, f32, f16, q8_0, q4_0, q4_1, q4_k, q6_k, q5_0, q5_1\)" "$ch01" --synthetic stories260K --weights q3_k
check reject 1 "--weights q8_0: tensor 'w2 \(layer 0\)' has rows of 172 numbers, not a whole number of Q8_0's 32-number blocks" "$ch01" --synthetic stories260K --weights q8_0 --steps 4
check reject 1 "--weights q4_1: no CUDA kernel for Q4_1 weights \(the CUDA backend runs f32, q8_0 and q4_0 weights\)" "$ch01" --synthetic stories260K --weights q4_1 --device cuda
check ok - "" "$ch01" --synthetic stories15M --weights q4_0 --steps 24 --temperature 0

# --- rows that need the real model files --------------------------------------------------------
if [ -n "$models" ] && [ -f "$models/stories260K.bin" ] && [ -f "$models/tok512.bin" ]; then
  # One infinity in rms_final: found at load, named by tensor and index.
  cp "$models/stories260K.bin" inf_weight.bin && chmod u+w inf_weight.bin
  read -r D H L _ KV_HEADS V _ < <(od -An -t d4 -N28 inf_weight.bin | tr -s ' \n' ' ')
  NH=$(od -An -t d4 -j12 -N4 inf_weight.bin | tr -d ' ')
  KV=$((D / NH * KV_HEADS))
  offset=$((28 + 4 * (V * D + L * D + L * D * D + 2 * L * KV * D + L * D * D + L * D + 3 * L * H * D + 3)))
  printf '\000\000\200\177' | dd of=inf_weight.bin bs=1 seek="$offset" conv=notrunc status=none
  fixtures="$(ls -A | sort)"
  check reject 1 "inf_weight.bin.*tensor rms_final holds inf at index 3" "$ch01" --model inf_weight.bin --temperature 0
  check reject 1 "tokenizer file .*(FIFO|directory)" "$ch01" --model "$models/stories260K.bin" --tokenizer dir
else
  if [ "${INFERLAB_REQUIRE_MODELS:-0}" = 1 ]; then note_fail "stories260K.bin / tok512.bin missing in '$models'"; fi
  echo "SKIPPED: the rows that need stories260K.bin (set INFERLAB_MODELS)"; skip=$((skip + 1))
fi

# --- vocabulary defects in a GGUF model: one line naming the file, before any work -------------
# Copies of SmolLM2 with one byte-for-byte patch each: its first merge "Ġ t" naming a character
# no byte-level vocabulary holds (U+0150), and its token 1 '<|im_start|>' starting with 0xFF.
if [ -n "$models" ] && [ -f "$models/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
  smol="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
  perl -0777 -pe 's/\x04\0{7}\xc4\xa0 t/\x04\0\0\0\0\0\0\0\xc5\x90 t/' "$smol" > vocab_bad_merge.gguf
  perl -0777 -pe 's/\x0c\0{7}<\|im_start\|>/\x0c\0\0\0\0\0\0\0\xff|im_start|>/' "$smol" > vocab_bad_utf8.gguf
  fixtures="$(ls -A | sort)"
  check reject 1 "vocab_bad_merge.gguf.*merge 0 '.* t' names '.*', which is not a token" "$ch01" --model vocab_bad_merge.gguf --steps 4
  check reject 1 "vocab_bad_merge.gguf.*merge 0 '.* t' names '.*', which is not a token" "${tok[@]}" --tokenizer vocab_bad_merge.gguf
  check reject 1 "vocab_bad_utf8.gguf.*token 1 is not valid UTF-8 \(byte 0: 0xFF\)" "$ch01" --model vocab_bad_utf8.gguf --steps 4
  check reject 1 "vocab_bad_utf8.gguf.*token 1 is not valid UTF-8 \(byte 0: 0xFF\)" "${tok[@]}" --tokenizer vocab_bad_utf8.gguf
  rm -f vocab_bad_merge.gguf vocab_bad_utf8.gguf
  fixtures="$(ls -A | sort)"
else
  if [ "${INFERLAB_REQUIRE_MODELS:-0}" = 1 ]; then note_fail "SmolLM2-135M-Instruct.Q4_1.gguf missing in '$models'"; fi
  echo "SKIPPED: the vocabulary-defect rows that need SmolLM2-135M-Instruct.Q4_1.gguf (set INFERLAB_MODELS)"; skip=$((skip + 1))
fi

# --- issue 29, the rest: one flag rule for chapters 01-08, NUL bytes shown, a short draft ------
# A NUL byte quoted from an input is shown as \0, and the message goes on after it.
printf 'root ::= "a" \0 "b"\n' > nul.gbnf
# A draft whose context (64, patched into a GGUF copy of stories260K's shape) is shorter than
# the positions the run forwards: refused up front, not proposing past it.
"$bin/bench_cpu_roofline" --synthetic stories260K --save-model ctx512.gguf > /dev/null
perl -0777 -pe 's/(llama\.context_length\x04\0\0\0)\0\x02\0\0/${1}\x40\0\0\0/s' ctx512.gguf > ctx64.gguf
rm -f ctx512.gguf
fixtures="$(ls -A | sort)"
check reject 1 "nul.gbnf:1:14: unexpected character '\\\\0'$" "${f08[@]}" --grammar nul.gbnf
check reject 1 "--draft ctx64.gguf: its context is 64 positions but this run forwards 100" "$ch07" --synthetic stories260K --threads 1 --steps 100 --proposer draft --draft ctx64.gguf
check ok 0 "" "$ch07" --synthetic stories260K --threads 1 --steps 40 --proposer draft --draft ctx64.gguf --temperature 0 --reps 1
# --compare under --json: the unconstrained run is in the object, not silently dropped.
check ok 0 "" bash -c '"$@" | grep -q "\"unconstrained\": {"' - "${q08[@]}" --compare --json
# Chapter 05: preemption never happens with contiguous reservations; the real run's flags on
# the simulated clock.
check reject 1 "--preempt applies only with --allocator paged or both, not --allocator contiguous" "${q05[@]}" --allocator contiguous --preempt swap
for flag_value in "--threads 2" "--device cpu" "--weights f16" "--reps 2" "--temperature 0.5" "--seed 3"; do
  read -r flag value <<< "$flag_value"
  check reject 1 "^error: $flag applies only to --clock real, not --clock sim$" "${q05s[@]}" "$flag" "$value"
done
check reject 1 "--reps applies only to --clock real, not --clock sim" "${q07s[@]}" --reps 2
check reject 1 "--reps applies only to --clock real, not --clock sim" "$ch06" --clock sim --reps 2
# The same rule in chapters 01-04 (and the chapters that write no logits).
check reject 1 "^error: --threads applies only to --hardware this$" "${q03[@]}" --threads 2
check reject 1 "^error: --chat-template applies only with --chat$" "${q01[@]}" --chat-template chatml
check reject 1 "^error: --sweep measures the real model: it applies only to --clock real$" "${q04[@]}" --clock sim --sweep
check reject 1 "^error: --reps applies only with --sweep$" "${q04[@]}" --reps 2
check reject 1 "^error: --dump-logits does not apply to this chapter$" "${q04[@]}" --dump-logits x.txt
check reject 1 "^error: --dump-logits does not apply to this chapter$" "${q06[@]}" --dump-logits x.txt

# --- chapter 09's --ppl-chunk (issue 26, the llama-perplexity comparison): refused before
# any model is loaded ---------------------------------------------------------------------------
ch09="$bin/ch09_weight_quantization"
for v in -1 1 2; do
  check reject 1 "^error: --ppl-chunk $v: must be 0 \(windows\) or >= 3 tokens$" "$ch09" --synthetic stories260K --formats f32 --ppl-chunk "$v"
done
check reject "1|2" "ppl-chunk" "$ch09" --synthetic stories260K --formats f32 --ppl-chunk abc
check reject "1|2" "ppl-chunk" "$ch09" --synthetic stories260K --formats f32 --ppl-chunk 2147483648
# Its --text: a regular, non-empty file, refused before any model is loaded (a FIFO blocked it).
q09=("$ch09" --synthetic stories260K --formats f32 --quick)
files q09 --text
check reject 1 "^error: --text empty_text.txt: the file is empty$" "${q09[@]}" --text empty_text.txt

echo "hostile inputs: $pass passed, $fail failed, $skip groups skipped"
[ "$fail" -eq 0 ]
