// The decode-throughput sweep (see decode_throughput.hpp).
#include "inferlab/serving/decode_throughput.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/timer.hpp"
#include "inferlab/runtime/runner.hpp"
#include "inferlab/serving/request.hpp"

namespace inferlab {

DecodeThroughput measure_decode_throughput(const Model& model, int batch, int context, int steps,
                                           Device device) {
  const ModelConfig& c = model.config();
  if (batch < 1 || context < 1 || steps < 1)
    throw Error("measure_decode_throughput: batch, context and steps must be >= 1");
  // In 64 bits: context + steps must not wrap around before it is compared.
  const std::int64_t needed = std::int64_t{context} + steps + 1;
  if (needed > c.seq_len) {
    throw Error(
        fmt::format("decode sweep: context {} + {} steps does not fit the model's {} "
                    "positions",
                    context, steps, c.seq_len));
  }
  const int capacity = static_cast<int>(needed);
  std::unique_ptr<ModelRunner> runner = make_runner(model, device);
  std::vector<KVCache> caches;
  caches.reserve(static_cast<std::size_t>(batch));
  std::vector<float> logits;
  for (int b = 0; b < batch; ++b) {
    caches.push_back(make_cache(*runner, capacity));
    const std::vector<int> prompt = synthetic_prompt(b, context, c.vocab_size);
    run_sequence(*runner, prompt, 0, caches.back(), LogitsMode::last, logits);
  }
  // Every sequence feeds a fixed token: the time of a step does not depend on which.
  const std::vector<int> token(static_cast<std::size_t>(batch), 3);
  std::vector<BatchEntry> entries(static_cast<std::size_t>(batch));
  auto decode_step = [&] {
    for (int b = 0; b < batch; ++b)
      entries[b] = {std::span<const int>(&token[b], 1), caches[b].length(), &caches[b]};
    runner->step(entries, LogitsMode::last, logits);
  };
  decode_step();  // warm-up: buffers grow, caches warm
  const double t0 = now_seconds();
  for (int i = 0; i < steps; ++i) decode_step();
  DecodeThroughput d;
  d.batch = batch;
  d.step_seconds = (now_seconds() - t0) / steps;
  d.tokens_per_second = batch / d.step_seconds;
  d.tokens_per_second_per_sequence = 1.0 / d.step_seconds;
  return d;
}

}  // namespace inferlab
