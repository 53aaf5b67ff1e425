#pragma once
/// @file cuda_model.hpp
/// @brief Bridges a core Model to the CUDA backend (only in builds with the CUDA backend, where
/// INFERLAB_HAVE_CUDA is defined).

#ifdef INFERLAB_HAVE_CUDA
#include "inferlab/kernels/cuda/transformer.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief The CUDA transformer's description of @p model: its dimensions and host pointers to
/// its weights (which must stay alive until the CudaTransformer has uploaded them).
cuda::CudaModelDesc cuda_model_desc(const Model& model);

}  // namespace inferlab
#endif
