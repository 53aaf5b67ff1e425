// Which weight storage the CUDA forward pass runs (runtime/cuda_weights.hpp), checked on the
// host: a --weights format refused before loading, and a loaded model's first tensor without a
// CUDA kernel named with its type (a mixed file included). No GPU needed.
#include <string>

#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/cuda_weights.hpp"
#include "small_models.hpp"
#include "test_support.hpp"

using namespace inferlab;
using Catch::Contains;
using kernels::TensorType;

namespace {

// The message require_cuda_weight_format() throws for @p format ("" when it passes).
std::string refusal(WeightFormat format) {
  try {
    require_cuda_weight_format(format);
  } catch (const ParameterError& e) {
    CHECK(e.parameter() == "weights");
    return e.problem();
  }
  return "";
}

}  // namespace

TEST_CASE("CUDA weights: the formats the CUDA pass runs, and one line for the others",
          "[unit][cuda_weights]") {
  for (WeightFormat ok :
       {WeightFormat::file, WeightFormat::f32, WeightFormat::q8_0, WeightFormat::q4_0})
    CHECK(refusal(ok).empty());
  CHECK(refusal(WeightFormat::q4_1) ==
        "q4_1: no CUDA kernel for Q4_1 weights (the CUDA backend runs f32, q8_0 and q4_0 "
        "weights)");
  CHECK_THAT(refusal(WeightFormat::f16), Contains("f16: no CUDA kernel for F16 weights"));
  CHECK_THAT(refusal(WeightFormat::q4_k), Contains("q4_k: no CUDA kernel for Q4_K weights"));
  CHECK_THAT(refusal(WeightFormat::q6_k), Contains("q6_k: no CUDA kernel for Q6_K weights"));
  CHECK_THAT(refusal(WeightFormat::q5_0), Contains("q5_0: no CUDA kernel for Q5_0 weights"));
  CHECK_THAT(refusal(WeightFormat::q5_1), Contains("q5_1: no CUDA kernel for Q5_1 weights"));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kQ5_0));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kQ5_1));
  CHECK(cuda_runs_tensor_type(TensorType::kQ8_0));
  CHECK(cuda_runs_tensor_type(TensorType::kQ4_0));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kQ4_1));
  CHECK_FALSE(cuda_runs_tensor_type(TensorType::kF32));  // only in a float32 model
}

TEST_CASE("CUDA weights: a loaded model's tensors are checked, the first refused one named",
          "[unit][cuda_weights]") {
  const ModelConfig c = test::small_block_config(false);
  SyntheticOptions options;
  CHECK(cuda_weights_problem(make_synthetic_model(c, options, "float")).empty());
  for (WeightFormat ok : {WeightFormat::q8_0, WeightFormat::q4_0}) {
    options.weights = ok;
    CHECK(cuda_weights_problem(make_synthetic_model(c, options, "blocks")).empty());
  }
  options.weights = WeightFormat::q4_1;
  CHECK(cuda_weights_problem(make_synthetic_model(c, options, "q4_1")) ==
        "tensor 'token_embedding' is stored as Q4_1: no CUDA kernel for it (the CUDA backend "
        "runs f32, q8_0 and q4_0 weights)");

  // A file whose matrices are Q8_0 but its classifier Q4_1: refused by the classifier's name,
  // never run with something else in its place; the same file with a Q8_0 classifier runs.
  const Model original = make_synthetic_model(c, {}, "mixed");
  const test::TempFile file("cuda_mixed", ".gguf");
  original.save_gguf(file.str(), TensorType::kQ8_0, TensorType::kQ4_1);
  CHECK_THAT(cuda_weights_problem(Model::load(file.str())),
             Contains("tensor 'wcls' is stored as Q4_1: no CUDA kernel for it"));
  original.save_gguf(file.str(), TensorType::kQ8_0, TensorType::kQ8_0);
  CHECK(cuda_weights_problem(Model::load(file.str())).empty());
  // A float32 matrix among blocks has no row-major copy to upload: named too.
  original.save_gguf(file.str(), TensorType::kQ8_0, TensorType::kF32);
  CHECK_THAT(cuda_weights_problem(Model::load(file.str())),
             Contains("tensor 'wcls' is stored as F32: the CUDA pass runs F32 tensors in a "
                      "float32 model only"));
}
