#pragma once
/// @file error.hpp
/// @brief The one exception type the core throws for bad input: inferlab::Error, defined in the
/// lowest layer (inferlab/kernels/error.hpp) so that the kernels throw it too.

#include "inferlab/kernels/error.hpp"
