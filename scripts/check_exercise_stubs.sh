#!/usr/bin/env bash
# Proves that no exercise test is vacuous: builds every exercise against the learner's stub
# (exercise.cpp, incomplete on purpose) and requires each test to FAIL. A stub that passes means
# its test does not check what the exercise asks for.
#
# Usage: scripts/check_exercise_stubs.sh [build-dir]     (default: build-exercises, at the repo root)
#   INFERLAB_JOBS=N   parallel build jobs (default: all cores)
#
# Exit status: 0 when every stub builds and every stub's test fails; 1 when a stub's test passes;
# non-zero (the failing command's) when configuring or building fails.
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
for name in "${tests[@]}"; do
  # A stub that loops forever is not a pass either; the timeout turns it into a failure.
  set +e
  timeout 300 "$build/bin/${name}_test" >"$logs/$name.log" 2>&1
  rc=$?
  set -e
  if [[ $rc -eq 0 ]]; then
    echo "ERROR: stub passes — its test is vacuous: $name (output: $logs/$name.log)"
    vacuous=1
  else
    echo "$name: stub fails as it should (exit $rc; output: $logs/$name.log)"
  fi
done

if [[ $vacuous -ne 0 ]]; then
  echo "== FAILED: at least one exercise test passes against its stub"
  exit 1
fi
echo "== OK: all ${#tests[@]} exercise stubs fail their tests"
