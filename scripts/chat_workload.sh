#!/usr/bin/env bash
# Writes a chat workload for chapters 04-06 (--workload-file): N requests to a ChatML model
# (SmolLM2, Qwen) that all start with the same system prompt, each with its own user question,
# rendered with the model's chat template and tokenized by the model's own tokenizer
# (inferlab_tokenize --parse-special, so <|im_start|> and <|im_end|> are one token each). Every
# line carries "prompt_ids", so the chapters serve exactly these tokens.
#
# Usage: scripts/chat_workload.sh [--requests N] [--max-tokens N] [--rate R] MODEL OUT.jsonl
#   MODEL       a GGUF file with a ChatML template (e.g. SmolLM2-135M-Instruct.Q4_1.gguf)
#   --requests  requests to write (default 32; the questions repeat beyond 16)
#   --max-tokens  each request's max_tokens (default 96)
#   --rate      arrivals per second, evenly spaced (default 0: all at t = 0)
#   INFERLAB_BIN  the folder holding inferlab_tokenize (default build/bin)
set -euo pipefail

requests=32 max_tokens=96 rate=0
while [[ $# -gt 2 ]]; do
  case "$1" in
    --requests) requests="$2"; shift 2 ;;
    --max-tokens) max_tokens="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    *) echo "unknown option $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
if [[ $# -ne 2 ]]; then
  echo "usage: $0 [--requests N] [--max-tokens N] [--rate R] MODEL OUT.jsonl" >&2
  exit 2
fi
model="$1" out="$2"
tokenize="${INFERLAB_BIN:-build/bin}/inferlab_tokenize"
[[ -x "$tokenize" ]] || { echo "error: $tokenize not found: build it first" >&2; exit 1; }

system="You are Sam, the support assistant of the Riverside public library. Answer in two or \
three short sentences, in plain English. The library opens from 9 am to 8 pm on weekdays and \
from 10 am to 5 pm on Saturdays; it is closed on Sundays. Members may borrow up to ten books \
for three weeks and renew them twice online. Late returns cost 20 cents per day per book. The \
reading room on the second floor is quiet; the children's corner is on the ground floor. If you \
do not know an answer, say so and suggest asking at the front desk."
questions=(
  "Are you open on Sunday?"
  "How many books can I borrow at once?"
  "What happens if I return a book late?"
  "Can I renew a book online?"
  "Where can I read quietly?"
  "Is there a place for kids?"
  "What time do you close on Saturday?"
  "How long can I keep a book?"
  "Do you have any advice for a first visit?"
  "I lost a book. What should I do?"
  "Can I print documents at the library?"
  "How much is the fine for a book that is a week late?"
  "When do you open on Monday?"
  "Can my child get a library card?"
  "Is the library open late on Friday?"
  "Who are you?"
)

: > "$out"
for ((i = 0; i < requests; ++i)); do
  q="${questions[$((i % ${#questions[@]}))]}"
  text=$'<|im_start|>system\n'"$system"$'<|im_end|>\n<|im_start|>user\n'"$q"$'<|im_end|>\n<|im_start|>assistant\n'
  ids=$(printf '%s' "$text" | "$tokenize" --tokenizer "$model" --whole --json --parse-special --no-bos)
  ids="${ids#\{\"ids\": }"
  ids="${ids%\}}"
  arrival=$(awk -v i="$i" -v r="$rate" 'BEGIN { printf "%.6f", (r > 0 ? i / r : 0) }')
  printf '{"prompt_ids": %s, "max_tokens": %d, "arrival": %s}\n' "$ids" "$max_tokens" \
    "$arrival" >> "$out"
done
echo "wrote $requests chat requests to $out (one system prompt, ${#questions[@]} questions)"
