// filled in by its module's work
#include "test_support.hpp"
