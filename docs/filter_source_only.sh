#!/usr/bin/env bash
# Doxygen input filter for implementation files (.cpp, a chapter's main.cpp, an exercise's files,
# tests/hostile_inputs.sh, exercises/CMakeLists.txt). The chapter texts link to these files; with
# this filter Doxygen parses only a one-line file comment, so none of their names enter the API
# reference (each exercise re-declares names of the core), while the source page, which Doxygen
# writes from the unfiltered file (FILTER_SOURCE_FILES = NO), shows the whole file.
printf '/** @file\n @brief Implementation file: see its source. */\n'
