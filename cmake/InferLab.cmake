# Shared build settings and the functions every chapter, exercise and test goes through.

# Warnings and sanitizers for project code only (never for the dependencies).
# Warnings are always shown; they are errors only with INFERLAB_WERROR=ON (the `ci` presets): a
# new compiler's or a dependency's new warning must never stop a learner's build.
add_library(inferlab_flags INTERFACE)
target_compile_options(inferlab_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
if(INFERLAB_WERROR)
  target_compile_options(inferlab_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
# The CPU the code is compiled for: INFERLAB_MARCH when set (CI compiles for x86-64-v2 and
# x86-64-v4 so that every vector code path is compiled on every run), else this machine's CPU.
if(INFERLAB_MARCH)
  target_compile_options(inferlab_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=${INFERLAB_MARCH}>)
elseif(INFERLAB_NATIVE)
  target_compile_options(inferlab_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
if(INFERLAB_SANITIZE)
  # GCC's -Wmaybe-uninitialized gives false positives inside libstdc++ (<regex>, <functional>)
  # once the sanitizers instrument the code; it stays a warning there, not an error.
  target_compile_options(inferlab_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-error=maybe-uninitialized>)
  target_link_options(inferlab_flags INTERFACE -fsanitize=address,undefined)
endif()
# Fuzzing (preset `fuzz`): libFuzzer's coverage instrumentation on all project code; the fuzz
# targets link libFuzzer itself. Only clang has it.
if(INFERLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "INFERLAB_FUZZ needs clang (libFuzzer): use the 'fuzz' preset, with the "
                        "Debian packages clang and libclang-rt-dev (scripts/setup.sh --fuzz)")
  endif()
  target_compile_options(inferlab_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()

# inferlab_add_chapter(TARGET ch01_naive_loop SOURCES 01_naive_loop/main.cpp
#                      SMOKE_ARGS --synthetic stories260K --steps 16
#                      BAD_ARGS --min-p 2  BAD_MESSAGE "min_p")
# Builds the chapter and, with tests on, registers CTests (label `chapter`): a smoke run with
# SMOKE_ARGS that must succeed without any model file, and, when BAD_ARGS is given, the same run
# with BAD_ARGS appended, which must fail with "error: ...BAD_MESSAGE".
function(inferlab_add_chapter)
  cmake_parse_arguments(ARG "" "TARGET;BAD_MESSAGE" "SOURCES;SMOKE_ARGS;BAD_ARGS" ${ARGN})
  add_executable(${ARG_TARGET} ${ARG_SOURCES})
  target_link_libraries(${ARG_TARGET} PRIVATE inferlab::app inferlab_flags)
  if(INFERLAB_BUILD_TESTS AND ARG_SMOKE_ARGS)
    add_test(NAME ${ARG_TARGET}_smoke COMMAND ${ARG_TARGET} ${ARG_SMOKE_ARGS})
    set_tests_properties(${ARG_TARGET}_smoke PROPERTIES LABELS chapter)
    if(ARG_BAD_ARGS)
      add_test(NAME ${ARG_TARGET}_rejects_bad_input
               COMMAND ${ARG_TARGET} ${ARG_SMOKE_ARGS} ${ARG_BAD_ARGS})
      set_tests_properties(${ARG_TARGET}_rejects_bad_input PROPERTIES LABELS chapter
                           PASS_REGULAR_EXPRESSION "error: .*${ARG_BAD_MESSAGE}")
    endif()
  endif()
endfunction()

# Skip protocol shared by every test that needs something the machine may lack (a model file,
# a GPU): the test prints "SKIPPED: why" and exits with this code, which CTest counts as skipped.
set(INFERLAB_SKIP_CODE 77)

# inferlab_add_showcase(NAME ch04_showcase_sim TARGET ch04_continuous_batching
#                       ARGS --clock sim --json
#                       EXPECT "/summary/continuous/steps < /summary/static/steps")
# Registers a CTest (label `showcase`) that runs a chapter's "Run it" command in a quick form
# through inferlab_showcase_check (tests/showcase_check.cpp), which parses the chapter's --json
# output and checks every EXPECT: the direction of the effect the chapter claims. Compare counts
# or simulated-clock times, never real-clock times. A missing model file skips the test.
function(inferlab_add_showcase)
  cmake_parse_arguments(ARG "" "NAME;TARGET" "ARGS;EXPECT" ${ARGN})
  if(NOT INFERLAB_BUILD_TESTS)
    return()
  endif()
  set(expect_args)
  foreach(e IN LISTS ARG_EXPECT)
    list(APPEND expect_args --expect "${e}")
  endforeach()
  add_test(NAME ${ARG_NAME}
           COMMAND inferlab_showcase_check ${expect_args} -- $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS showcase SKIP_RETURN_CODE ${INFERLAB_SKIP_CODE})
endfunction()
