// Catch2's main, shared by every exercise test (compiled once, as an object library).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
