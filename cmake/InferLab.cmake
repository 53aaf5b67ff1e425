# Shared build settings and the functions every chapter, exercise and test goes through.

# Warnings and sanitizers for project code only (never for the dependencies).
add_library(inferlab_flags INTERFACE)
target_compile_options(inferlab_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>)
if(INFERLAB_NATIVE)
  target_compile_options(inferlab_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()
if(INFERLAB_SANITIZE)
  target_compile_options(inferlab_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(inferlab_flags INTERFACE -fsanitize=address,undefined)
endif()

# inferlab_add_chapter(NAME 01_naive_loop TARGET ch01_naive_loop SOURCES main.cpp)
function(inferlab_add_chapter)
  cmake_parse_arguments(ARG "" "TARGET" "SOURCES" ${ARGN})
  add_executable(${ARG_TARGET} ${ARG_SOURCES})
  target_link_libraries(${ARG_TARGET} PRIVATE inferlab::core inferlab_flags CLI11::CLI11)
endfunction()

# Skip protocol shared by every test that needs something the machine may lack (a model file,
# a GPU): the test prints "SKIPPED: why" and exits with this code, which CTest counts as skipped.
set(INFERLAB_SKIP_CODE 77)
