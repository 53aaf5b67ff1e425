// Shared command-line plumbing of the generating chapters.
#include "inferlab/app/chapter_cli.hpp"

#include <omp.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "inferlab/base/device.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/model/gguf.hpp"
#include "inferlab/model/model_files.hpp"
#include "inferlab/model/weight_format.hpp"
#include "inferlab/runtime/cuda_weights.hpp"
#include "inferlab/base/safe_files.hpp"

namespace inferlab {

int run_chapter(CLI::App& app, int argc, char** argv, const std::function<int()>& run) {
  return run_main(app, argc, argv, run);
}

void remove_prompt_flags(CLI::App& app) {
  for (const char* flag : {"--prompt", "--steps", "--parse-special", "--no-bos"})
    app.remove_option(app.get_option(flag));
}

void add_generation_flags(CLI::App& app, GenerationFlags& f) {
  CLI::Option* model =
      app.add_option("--model", f.model,
                     "model file (GGUF or llama2.c), or smollm2; default stories260K.bin "
                     "found in $INFERLAB_MODELS or models/");
  app.add_option("--tokenizer", f.tokenizer, "tokenizer file; default matches the vocabulary");
  app.add_option("--synthetic", f.synthetic,
                 "run on a generated random-weight model of this shape instead of a file (" +
                     fmt::format("{}", fmt::join(named_config_names(), ", ")) + ")")
      ->excludes(model);
  app.add_option("--prompt", f.prompt, "prompt text")->capture_default_str();
  app.add_flag("--parse-special", f.parse_special,
               "special-token text in the prompt (<|im_start|>, <s>) becomes its one token");
  app.add_flag("--no-bos", f.no_bos, "do not prepend BOS to the prompt");
  app.add_option("--steps", f.steps,
                 "positions to forward, prompt included (like llama2.c -n); 0 = the context")
      ->check(integer_in(0, std::numeric_limits<int>::max(), "0 = the whole context"))
      ->capture_default_str();
  SamplingParams& s = f.sampling;
  // The ranges SamplingParams::validate() enforces, checked as the flags are read so that the
  // message names the flag; float flags stop at FLT_MAX, beyond which they would be infinite.
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  app.add_option("--temperature", s.temperature, "0 = greedy")
      ->check(finite_in(0.0, kFloatMax))
      ->capture_default_str();
  app.add_option("--top-k", s.top_k, "0 = off")
      ->check(integer_in(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  app.add_option("--top-p", s.top_p, "1 = off")
      ->check(finite_in(0.0, 1.0, /*lo_open=*/true))
      ->capture_default_str();
  app.add_option("--min-p", s.min_p, "0 = off")->check(finite_in(0.0, 1.0))->capture_default_str();
  app.add_option("--repetition-penalty", s.repetition_penalty, "1 = off")
      ->check(finite_in(0.0, kFloatMax, /*lo_open=*/true))
      ->capture_default_str();
  app.add_option("--frequency-penalty", s.frequency_penalty, "0 = off")
      ->check(finite_in(-kFloatMax, kFloatMax))
      ->capture_default_str();
  app.add_option("--presence-penalty", s.presence_penalty, "0 = off")
      ->check(finite_in(-kFloatMax, kFloatMax))
      ->capture_default_str();
  app.add_option("--seed", s.seed, "RNG seed")->check(unsigned_64())->capture_default_str();
  app.add_option("--threads", f.threads, "CPU threads (0 = OpenMP default)")->check(thread_count());
  app.add_option("--device", f.device, "where the forward pass runs: cpu or cuda")
      ->capture_default_str();
  app.add_option("--weights", f.weights,
                 "weight storage: " + fmt::format("{}", fmt::join(weight_format_names(), ", ")) +
                     " (file = the file's own types; a format quantizes the linear layers and "
                     "the embedding at load)")
      ->capture_default_str();
  app.add_flag("--json", f.json, "print one JSON object instead of streaming text");
  app.add_option("--dump-logits", f.dump_logits,
                 "write 'pos token logit...' rows for every forwarded position to this file");
}

GenerateOptions generate_options(const GenerationFlags& f) {
  GenerateOptions g;
  g.prompt = f.prompt;
  g.encoding.add_bos = !f.no_bos;
  g.encoding.parse_special = f.parse_special;
  g.steps = f.steps;
  g.sampling = f.sampling;
  g.device = parse_device(f.device);
  g.keep_logits = !f.dump_logits.empty();
  return g;
}

LoadedModel load_model(const GenerationFlags& f) {
  // Everything the flags alone can tell is checked before any loading or printing.
  f.sampling.validate();
  // The storage is checked against the device before the device itself: a format the CUDA
  // pass cannot run is refused the same way on a machine with or without a GPU.
  const WeightFormat weights = parse_weight_format(f.weights);
  const bool cuda = parse_device(f.device) == Device::cuda;
  if (cuda) require_cuda_weight_format(weights);
  require_device(parse_device(f.device));
  if (f.threads < 0 || f.threads > max_threads())
    throw Error(fmt::format("--threads {} is outside [0, {}]", f.threads, max_threads()));
  require_utf8(f.prompt, "--prompt");
  if (!f.dump_logits.empty()) require_writable_output(f.dump_logits, "--dump-logits");
  if (f.threads > 0) omp_set_num_threads(f.threads);
  LoadedModel m;
  std::string model_path;
  if (!f.synthetic.empty()) {
    SyntheticOptions synthetic;
    synthetic.weights = weights;
    m.model.emplace(make_synthetic_model(f.synthetic, synthetic));
  } else {
    model_path = find_model(f.model);
    m.model.emplace(Model::load(model_path, LoadOptions{weights}));
  }
  if (const std::string problem = cuda ? cuda_weights_problem(*m.model) : ""; !problem.empty())
    throw ParameterError("weights", fmt::format("{}: {}", f.weights, problem));
  const int V = m.model->config().vocab_size;
  // A GGUF model carries its tokenizer; --tokenizer still overrides it.
  const std::string path = f.tokenizer.empty() && GgufFile::has_magic(model_path)
                               ? model_path
                               : find_tokenizer(f.tokenizer,
                                                f.synthetic.empty() ? m.model->name() : "", V);
  if (path.empty()) {
    if (f.synthetic.empty()) {
      throw Error(
          fmt::format("no tokenizer found for a vocabulary of {} pieces: pass --tokenizer", V));
    }
    m.tokenizer.emplace(Tokenizer::synthetic(V));
    m.tokenizer_source = "synthetic";
  } else {
    m.tokenizer.emplace(Tokenizer::load(path, V));
    m.tokenizer_source = path;
  }
  // The lengths, as soon as they are known: before the run header, before any forward pass.
  const int context = m.model->config().seq_len;
  if (f.steps > context)
    throw Error(
        fmt::format("--steps {} exceeds the model's context of {} positions (0 = the whole "
                    "context)",
                    f.steps, context));
  const std::size_t prompt_tokens =
      m.tokenizer->encode(f.prompt, generate_options(f).encoding).size();
  const int allowed = f.steps == 0 ? context : f.steps;
  if (prompt_tokens > static_cast<std::size_t>(allowed))
    throw Error(
        fmt::format("--prompt is {} tokens (BOS included) but only {} positions are "
                    "allowed (--steps {}, context {})",
                    prompt_tokens, allowed, f.steps, context));
  return m;
}

LoadedModel load_model_or_tokenizer(const GenerationFlags& f) {
  if (!f.model.empty() || !f.synthetic.empty()) return load_model(f);
  bool default_model_found = true;
  try {
    find_model("");
  } catch (const Error&) {
    default_model_found = false;
  }
  if (default_model_found) return load_model(f);  // the same run as with a model file
  f.sampling.validate();
  if (f.threads < 0 || f.threads > max_threads())
    throw Error(fmt::format("--threads {} is outside [0, {}]", f.threads, max_threads()));
  require_utf8(f.prompt, "--prompt");
  constexpr int kDefaultVocab = 512;  // stories260K's, the default model's
  LoadedModel m;
  const std::string path = find_tokenizer(f.tokenizer, "", kDefaultVocab);
  if (path.empty()) {
    m.tokenizer.emplace(Tokenizer::synthetic(kDefaultVocab));
    m.tokenizer_source = "synthetic";
  } else {
    m.tokenizer.emplace(Tokenizer::load(path, kDefaultVocab));
    m.tokenizer_source = path;
  }
  return m;
}

void print_run_header(const char* title, const LoadedModel& m, const GenerationFlags& f,
                      const std::string& extra) {
  const SamplingParams& s = f.sampling;
  const ModelConfig& c = m.model->config();
  std::printf("%s\n", title);
  std::printf("model:     %s\n", m.model->name().c_str());
  std::printf(
      "           dim %d, hidden %d, %d layers, %d heads / %d KV heads, vocab %d, "
      "context %d, %.2fM params\n",
      c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
      c.n_params() / 1e6);
  if (!m.model->load_note().empty()) std::printf("           %s\n", m.model->load_note().c_str());
  std::printf("tokenizer: %s\n", m.tokenizer_source == "synthetic"
                                     ? "synthetic (generated pieces, no file)"
                                     : m.tokenizer_source.c_str());
  if (parse_device(f.device) == Device::cuda) {
    // generate() takes a plain greedy step's argmax on the GPU; penalties, other sampling and
    // --dump-logits need the logits on the host.
    const bool argmax_on_gpu = s.greedy() && s.repetition_penalty == 1.0f &&
                               s.frequency_penalty == 0.0f && s.presence_penalty == 0.0f &&
                               f.dump_logits.empty();
    std::printf("device:    cuda (forward pass on the GPU; %s)\n",
                argmax_on_gpu ? "greedy argmax on the GPU, only the token id is copied back"
                              : "logits copied back, sampling on the host");
  } else {
    std::printf("device:    cpu, %d threads\n", omp_get_max_threads());
  }
  std::printf(
      "sampling:  temperature %g, top-k %d, min-p %g, top-p %g, repetition %g, "
      "frequency %g, presence %g, seed %llu\n",
      s.temperature, s.top_k, s.min_p, s.top_p, s.repetition_penalty, s.frequency_penalty,
      s.presence_penalty, static_cast<unsigned long long>(s.seed));
  if (!extra.empty()) std::printf("%s\n", extra.c_str());
  std::printf("\n");
}

namespace {

nlohmann::json summary_json(const Summary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90},    {"p99", s.p99},
          {"min", s.min},   {"max", s.max}, {"count", s.count}};
}

double decode_forward_seconds(const GenerationResult& r, int* steps = nullptr) {
  double total = 0.0;
  int n = 0;
  for (const StepRecord& s : r.steps) {
    if (!s.prefill) {
      total += s.seconds;
      ++n;
    }
  }
  if (steps) *steps = n;
  return total;
}

}  // namespace

void print_timing_noise(int reps, double max_spread) {
  if (reps <= 1) {
    std::printf(
        "  timings: single samples, noise unknown: repeat with --reps 5 (and --threads 1 on "
        "a busy machine)\n");
    return;
  }
  std::printf("  timings: median of %d runs; widest spread (max - min) / median %.0f%%%s\n", reps,
              100.0 * max_spread,
              max_spread > 0.10 ? ": noisy, compare only large differences (stabler: --threads 1, "
                                  "more --reps, an idle machine)"
                                : "");
}

void print_stop_reason(const GenerationResult& r) {
  // tokens holds BOS, the prompt and every sampled token; the last sampled one is not forwarded.
  const int forwarded = static_cast<int>(r.tokens.size()) - 1;
  switch (r.stop_reason) {
    case GenerationStop::eos:
      std::printf(
          "stopped:          eos: after position %d the model sampled its end-of-text "
          "token (%sid %d)\n",
          forwarded - 1, r.tokens.back() == kBosToken ? "BOS, " : "", r.tokens.back());
      break;
    case GenerationStop::max_steps:
      std::printf("stopped:          max_steps: %d positions forwarded (--steps)\n", forwarded);
      break;
    case GenerationStop::context:
      std::printf("stopped:          context: all %d positions of the model's context used\n",
                  forwarded);
      break;
  }
}

std::function<void(std::string_view)> stdout_text_stream(const GenerationFlags& f) {
  if (f.json) return [](std::string_view) {};
  return [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
}

nlohmann::json generation_json(const char* chapter, const LoadedModel& m, const GenerationFlags& f,
                               const GenerationResult& r) {
  const RequestMetrics& mt = r.metrics;
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& s : r.steps)
    steps.push_back({{"position", s.position},
                     {"tokens_forwarded", s.tokens_forwarded},
                     {"seconds", s.seconds},
                     {"prefill", s.prefill}});
  return {{"chapter", chapter},
          {"model", m.model->name()},
          {"tokenizer", m.tokenizer_source},
          {"device", f.device},
          {"threads", omp_get_max_threads()},
          {"prompt", f.prompt},
          {"prompt_tokens", r.prompt_tokens},
          {"tokens", r.tokens},
          {"generated_tokens", r.tokens.size() - r.prompt_tokens.size()},
          {"text", r.text},
          {"stop_reason", generation_stop_name(r.stop_reason)},
          {"metrics",
           {{"ttft_s", mt.ttft},
            {"tpot_s", mt.tpot},
            {"e2e_s", mt.e2e},
            {"output_tokens", mt.output_tokens},
            {"throughput_tokens_per_s", mt.e2e > 0 ? mt.output_tokens / mt.e2e : 0.0},
            {"itl_s", summary_json(summarize(mt.itl))},
            {"prefill_s", r.steps.front().seconds},
            {"decode_forward_s", decode_forward_seconds(r)}}},
          {"steps", steps}};
}

void write_logits_file(const std::string& path, const GenerationResult& r) {
  OutputFile file(path, "--dump-logits");
  std::ostream& out = file.stream();
  out << "# inferlab logits: one row per position: pos token logit_0 ... logit_{V-1}\n";
  for (std::size_t pos = 0; pos < r.logits.size(); ++pos) {
    out << pos << ' ' << r.tokens[pos];
    for (float v : r.logits[pos]) out << ' ' << fmt::format("{:.6e}", v);
    out << '\n';
  }
  file.commit();
}

void print_generation_metrics(const GenerationResult& r) {
  const RequestMetrics& m = r.metrics;
  int decode_steps = 0;
  const double decode_seconds = decode_forward_seconds(r, &decode_steps);
  const int generated = static_cast<int>(r.tokens.size() - r.prompt_tokens.size());
  std::printf("prompt phase:     %zu tokens in one forward: %.3f ms  (TTFT %.3f ms)\n",
              r.prompt_tokens.size(), r.steps.front().seconds * 1e3, m.ttft * 1e3);
  if (decode_steps > 0) {
    const Summary itl = summarize(m.itl);
    std::printf(
        "generation phase: %d tokens, %d forwards, mean %.3f ms per forward  "
        "(TPOT %.3f ms, %.1f tokens/s)\n",
        generated, decode_steps, decode_seconds / decode_steps * 1e3, m.tpot * 1e3,
        m.tpot > 0 ? 1.0 / m.tpot : 0.0);
    std::printf("ITL:              p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                itl.p50 * 1e3, itl.p90 * 1e3, itl.p99 * 1e3, itl.max * 1e3);
  }
  std::printf("end to end:       %.3f ms for %d output tokens (%.1f tokens/s)\n", m.e2e * 1e3,
              m.output_tokens, m.e2e > 0 ? m.output_tokens / m.e2e : 0.0);
  print_stop_reason(r);
}

}  // namespace inferlab
