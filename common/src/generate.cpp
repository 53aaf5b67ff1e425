// The autoregressive generation loop.
#include "inferlab/generate.hpp"

#include <memory>

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/forward.hpp"
#ifdef INFERLAB_HAVE_CUDA
#include "inferlab/cuda_model.hpp"
#endif
#include "inferlab/timer.hpp"

namespace inferlab {

namespace {

// Produces a step's logits. `from` == 0 starts a new sequence (the naive loop does so at every
// step); otherwise the tokens extend the sequence held from the previous calls.
class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual void run(std::span<const int> tokens, int from, bool all_rows,
                   std::vector<float>& logits) = 0;
};

class CpuRunner final : public StepRunner {
 public:
  CpuRunner(const Model& model, int capacity, KVType type)
      : pass_(model), cache_(model.config(), capacity, type) {}
  void run(std::span<const int> tokens, int from, bool all_rows,
           std::vector<float>& logits) override {
    if (from == 0) cache_.clear();  // a fresh sequence: nothing is remembered
    pass_.forward(tokens, from, cache_, all_rows ? LogitsMode::all : LogitsMode::last, logits);
  }

 private:
  ForwardPass pass_;
  KVCache cache_;
};

#ifdef INFERLAB_HAVE_CUDA
// The same steps on the GPU: weights uploaded once, the KV cache on the device, logits copied
// back because sampling happens on the host.
class CudaRunner final : public StepRunner {
 public:
  explicit CudaRunner(const Model& model)
      : gpu_(cuda_model_desc(model)), vocab_(model.config().vocab_size) {}
  void run(std::span<const int> tokens, int from, bool all_rows,
           std::vector<float>& logits) override {
    if (from == 0) gpu_.reset();
    const int T = static_cast<int>(tokens.size());
    logits.resize(std::size_t(all_rows ? T : 1) * vocab_);
    try {
      gpu_.forward(tokens.data(), T, from, all_rows, logits.data());
    } catch (const std::exception& e) {
      throw Error(fmt::format("CUDA forward: {}", e.what()));
    }
  }

 private:
  cuda::CudaTransformer gpu_;
  int vocab_;
};
#endif

std::unique_ptr<StepRunner> make_step_runner(const Model& model, const GenerateOptions& o,
                                             int steps) {
  require_device(o.device);
  if (o.device == Device::cuda) {
    if (o.kv_type != KVType::f32)
      throw Error("--device cuda: the CUDA backend stores the KV cache in f32 only");
#ifdef INFERLAB_HAVE_CUDA
    return std::make_unique<CudaRunner>(model);
#endif
  }
  return std::make_unique<CpuRunner>(model, steps, o.kv_type);
}

}  // namespace

GenerationResult generate(const Model& model, const Tokenizer& tokenizer,
                          const GenerateOptions& options,
                          const std::function<void(std::string_view)>& on_text) {
  const ModelConfig& c = model.config();
  if (tokenizer.vocab_size() != c.vocab_size) {
    throw Error(fmt::format("tokenizer has {} pieces but the model's vocabulary is {}",
                            tokenizer.vocab_size(), c.vocab_size));
  }
  if (options.steps < 0) throw Error(fmt::format("steps = {} (must be >= 0)", options.steps));
  const int steps = options.steps == 0 || options.steps > c.seq_len ? c.seq_len : options.steps;
  Sampler sampler(options.sampling, c.vocab_size);  // validates the parameters

  GenerationResult r;
  r.timeline.arrival = now_seconds();
  r.prompt_tokens = tokenizer.encode(options.prompt, /*bos=*/true);
  const int P = static_cast<int>(r.prompt_tokens.size());
  if (P > steps) {
    throw Error(fmt::format(
        "the prompt is {} tokens (BOS included) but only {} positions are allowed (--steps {}, "
        "context {}): shorten the prompt or raise --steps",
        P, steps, options.steps, c.seq_len));
  }

  std::vector<int>& seq = r.tokens;
  seq = r.prompt_tokens;
  StreamDecoder printer(tokenizer);
  auto emit = [&](std::size_t i) {  // print seq[i], which follows seq[i - 1]
    const std::string piece = printer.push(seq[i - 1], seq[i]);
    if (piece.empty()) return;
    r.text += piece;
    if (on_text) on_text(piece);
  };
  for (int i = 1; i < P; ++i) emit(i);  // the prompt is echoed, as the reference does

  const bool cached = options.loop == LoopKind::cached;
  std::unique_ptr<StepRunner> runner = make_step_runner(model, options, steps);
  r.kv_bytes_per_token = KVCache(c, 1, options.kv_type).bytes_per_token();
  std::vector<float> logits;
  int forwarded = 0;  // positions whose logits have been computed
  while (true) {
    const bool prefill = forwarded == 0;
    const int n = prefill ? P : forwarded + 1;  // the sequence this step produces logits for
    // Both loops start alike: the whole prompt in one forward (the prefill phase). After it the
    // cached loop forwards only the newest token; the naive loop re-processes all n.
    const int from = prefill || !cached ? 0 : forwarded;
    const bool all_rows = prefill && options.keep_logits;
    const double t0 = now_seconds();
    runner->run(std::span<const int>(seq.data() + from, n - from), from, all_rows, logits);
    const double t1 = now_seconds();
    r.steps.push_back({n - 1, n - from, t1 - t0, prefill});
    forwarded = n;
    if (options.keep_logits) {
      const int rows = static_cast<int>(logits.size() / c.vocab_size);
      for (int i = 0; i < rows; ++i)
        r.logits.emplace_back(logits.begin() + std::ptrdiff_t(i) * c.vocab_size,
                              logits.begin() + std::ptrdiff_t(i + 1) * c.vocab_size);
    }
    const std::span<const float> last(logits.data() + logits.size() - c.vocab_size, c.vocab_size);
    const int next = sampler.sample(last, seq);
    seq.push_back(next);
    r.timeline.token_times.push_back(now_seconds());
    if (next == kBosToken) break;  // the model's end-of-text signal
    emit(seq.size() - 1);
    if (forwarded >= steps) break;
  }
  const std::string tail = printer.flush();
  if (!tail.empty()) {
    r.text += tail;
    if (on_text) on_text(tail);
  }
  r.metrics = request_metrics(r.timeline);
  if (cached) r.kv_bytes_in_use = r.kv_bytes_per_token * std::size_t(forwarded);
  return r;
}

}  // namespace inferlab
