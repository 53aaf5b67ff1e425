// Catch2's main for the [gpu] tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
