#!/usr/bin/env bash
# Proves that no exercise test is vacuous: builds every exercise against the learner's stub
# (exercise.cpp, incomplete on purpose) and requires each test to FAIL. A stub that passes means
# its test does not check what the exercise asks for.
#
# Usage: scripts/check_exercise_stubs.sh [build-dir]     (default: build-exercises, at the repo root)
#   INFERLAB_JOBS=N   parallel build jobs (default: all cores)
#
# A stub must fail *cleanly*: failed assertions and Catch's summary, not a crash (a signal such
# as SIGFPE or SIGSEGV, which Catch reports as a "fatal error condition") and not a hang. A
# crash tells the learner nothing about what is missing.
#
# Exit status: 0 when every stub builds and every stub's test fails cleanly; 1 when a stub's test
# passes, crashes or hangs; non-zero (the failing command's) when configuring or building fails.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(realpath -m "${1:-$root/build-exercises}")"
jobs="${INFERLAB_JOBS:-$(nproc)}"

# One entry per exercise folder NN_name/, named as inferlab_add_exercise names them.
tests=()
for dir in "$root"/exercises/[0-9][0-9]_*/; do
  base="$(basename "$dir")"
  tests+=("ex${base%%_*}_${base#*_}")
done
if [[ ${#tests[@]} -eq 0 ]]; then
  echo "ERROR: no exercise folder found under $root/exercises" >&2
  exit 1
fi

echo "== configuring $build with the learner's stubs (INFERLAB_EXERCISE_VARIANT=exercise)"
cmake -S "$root" -B "$build" -G Ninja \
  -DINFERLAB_EXERCISE_VARIANT=exercise -DINFERLAB_BUILD_TESTS=ON \
  -DINFERLAB_CUDA=OFF -DINFERLAB_BUILD_DOCS=OFF

echo "== building ${tests[*]/%/_test}"
# A stub must compile warning-free: a build failure here is a broken exercise, and set -e
# makes the script exit with the build's status.
cmake --build "$build" --parallel "$jobs" --target "${tests[@]/%/_test}"

echo "== running each stub's test (each must fail)"
logs="$build/exercise-stub-logs"
mkdir -p "$logs"
vacuous=0
unclean=0
for name in "${tests[@]}"; do
  log="$logs/$name.log"
  # A stub that loops forever is not a pass either; the timeout turns it into a failure, and
  # --verbose leaves a line in the log that tells a hang from a test's own exit status.
  set +e
  timeout --verbose 300 "$build/bin/${name}_test" >"$log" 2>&1
  rc=$?
  set -e
  if [[ $rc -eq 0 ]]; then
    echo "ERROR: stub passes — its test is vacuous: $name (output: $log)"
    vacuous=1
  elif grep -q "^timeout: sending signal" "$log"; then
    echo "ERROR: stub hangs (killed after 300 s): $name (output: $log)"
    unclean=1
  elif grep -q "fatal error condition" "$log" || ! grep -qE "^test cases:.*failed" "$log"; then
    echo "ERROR: stub crashes instead of failing an assertion (exit $rc): $name (output: $log)"
    unclean=1
  else
    echo "$name: stub fails as it should (exit $rc; output: $log)"
  fi
done

if [[ $vacuous -ne 0 ]]; then
  echo "== FAILED: at least one exercise test passes against its stub"
  exit 1
fi
if [[ $unclean -ne 0 ]]; then
  echo "== FAILED: at least one exercise test crashes or hangs against its stub"
  exit 1
fi
echo "== OK: all ${#tests[@]} exercise stubs fail their tests cleanly"
