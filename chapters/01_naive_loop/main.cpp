// Chapter 01: the naive generation loop.
//
// Generates text from a real model by re-running the whole sequence through the transformer at
// every step, streaming each piece as it appears, then shows what that costs: step time grows
// with the sequence, and the prompt phase (one forward over the prompt) differs from the
// generation phase (one new token per forward). All the logic lives in common/ and kernels/;
// this file only wires it together and prints.
#include <omp.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "inferlab/error.hpp"
#include "inferlab/generate.hpp"
#include "inferlab/model.hpp"
#include "inferlab/model_files.hpp"
#include "inferlab/tokenizer.hpp"

using namespace inferlab;

namespace {

struct Options {
  std::string model, tokenizer, synthetic, prompt = "Once upon a time", dump_logits;
  int steps = 256, threads = 0;
  bool json = false;
  SamplingParams sampling;
};

nlohmann::json summary_json(const Summary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99},
          {"min", s.min},   {"max", s.max}, {"count", s.count}};
}

void write_logits(const std::string& path, const GenerationResult& r) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("cannot write logits to '{}'", path));
  out << "# inferlab ch01 logits: one row per position: pos token logit_0 ... logit_{V-1}\n";
  for (std::size_t pos = 0; pos < r.logits.size(); ++pos) {
    out << pos << ' ' << r.tokens[pos];
    for (float v : r.logits[pos]) out << ' ' << fmt::format("{:.6e}", v);
    out << '\n';
  }
}

// The lesson in one table: how long each forward took against how many tokens it re-processed.
void print_step_table(const GenerationResult& r) {
  std::printf("\nstep time vs position (each step re-processes the whole sequence):\n");
  std::printf("  %8s  %16s  %10s\n", "position", "tokens forwarded", "step ms");
  const std::size_t n = r.steps.size();
  // About 12 rows spread over the run, always the first and the last.
  const std::size_t stride = n > 12 ? (n + 11) / 12 : 1;
  for (std::size_t i = 0; i < n; i += stride) {
    const StepRecord& s = r.steps[i];
    std::printf("  %8d  %16d  %10.3f%s\n", s.position, s.tokens_forwarded, s.seconds * 1e3,
                s.prefill ? "   <- prompt phase" : "");
  }
  if ((n - 1) % stride != 0) {
    const StepRecord& s = r.steps.back();
    std::printf("  %8d  %16d  %10.3f\n", s.position, s.tokens_forwarded, s.seconds * 1e3);
  }
  if (n >= 3) {
    const StepRecord &a = r.steps[1], &b = r.steps.back();
    std::printf("  the last step forwarded %.1fx the tokens of the first generation step and took "
                "%.1fx as long\n",
                double(b.tokens_forwarded) / a.tokens_forwarded, b.seconds / a.seconds);
  }
}

int run(const Options& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  // --- load ---
  std::optional<Model> model;
  std::string tokenizer_path;
  if (!o.synthetic.empty()) {
    model.emplace(make_synthetic_model(o.synthetic));
  } else {
    model.emplace(Model::load(find_model(o.model)));
  }
  const ModelConfig& c = model->config();
  tokenizer_path = find_tokenizer(o.tokenizer, o.synthetic.empty() ? model->name() : "", c.vocab_size);
  const Tokenizer tokenizer = tokenizer_path.empty() ? Tokenizer::synthetic(c.vocab_size)
                                                     : Tokenizer::load(tokenizer_path, c.vocab_size);
  if (!o.json) {
    std::printf("InferLab chapter 01: the naive generation loop\n");
    std::printf("model:     %s\n", model->name().c_str());
    std::printf("           dim %d, hidden %d, %d layers, %d heads / %d KV heads, vocab %d, "
                "context %d, %.2fM params\n",
                c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
                c.n_params() / 1e6);
    std::printf("tokenizer: %s\n", tokenizer_path.empty() ? "synthetic (generated pieces, no file)"
                                                          : tokenizer_path.c_str());
    std::printf("device:    cpu, %d threads\n", omp_get_max_threads());
    std::printf("sampling:  temperature %g, top-k %d, min-p %g, top-p %g, repetition %g, "
                "frequency %g, presence %g, seed %llu\n\n",
                o.sampling.temperature, o.sampling.top_k, o.sampling.min_p, o.sampling.top_p,
                o.sampling.repetition_penalty, o.sampling.frequency_penalty,
                o.sampling.presence_penalty, static_cast<unsigned long long>(o.sampling.seed));
  }

  // --- generate ---
  GenerateOptions g;
  g.prompt = o.prompt;
  g.steps = o.steps;
  g.sampling = o.sampling;
  g.keep_logits = !o.dump_logits.empty();
  const GenerationResult r = generate(*model, tokenizer, g, [&](std::string_view piece) {
    if (!o.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  });
  if (!o.dump_logits.empty()) write_logits(o.dump_logits, r);

  // --- measure ---
  const RequestMetrics& m = r.metrics;
  double decode_seconds = 0.0;
  int decode_steps = 0;
  for (const StepRecord& s : r.steps) {
    if (!s.prefill) {
      decode_seconds += s.seconds;
      ++decode_steps;
    }
  }
  const int generated = static_cast<int>(r.tokens.size() - r.prompt_tokens.size());
  const Summary itl = summarize(m.itl.empty() ? std::vector<double>{0.0} : m.itl);
  if (o.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const StepRecord& s : r.steps)
      steps.push_back({{"position", s.position}, {"tokens_forwarded", s.tokens_forwarded},
                       {"seconds", s.seconds}, {"prefill", s.prefill}});
    nlohmann::json out = {
        {"chapter", "01_naive_loop"},
        {"model", model->name()},
        {"tokenizer", tokenizer_path.empty() ? "synthetic" : tokenizer_path},
        {"device", "cpu"},
        {"threads", omp_get_max_threads()},
        {"prompt", o.prompt},
        {"prompt_tokens", r.prompt_tokens},
        {"tokens", r.tokens},
        {"generated_tokens", generated},
        {"text", r.text},
        {"metrics",
         {{"ttft_s", m.ttft},
          {"tpot_s", m.tpot},
          {"e2e_s", m.e2e},
          {"output_tokens", m.output_tokens},
          {"throughput_tokens_per_s", m.e2e > 0 ? m.output_tokens / m.e2e : 0.0},
          {"itl_s", summary_json(itl)},
          {"prefill_s", r.steps.front().seconds},
          {"decode_forward_s", decode_seconds}}},
        {"steps", steps}};
    // Invalid UTF-8 cannot occur in text (the stream decoder drops it); replace defensively.
    std::cout << out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    return 0;
  }
  std::printf("\n\n--- measurements ---\n");
  std::printf("prompt phase:     %zu tokens in one forward: %.3f ms  (TTFT %.3f ms)\n",
              r.prompt_tokens.size(), r.steps.front().seconds * 1e3, m.ttft * 1e3);
  if (decode_steps > 0) {
    std::printf("generation phase: %d tokens, %d forwards, mean %.3f ms per forward  "
                "(TPOT %.3f ms, %.1f tokens/s)\n",
                generated, decode_steps, decode_seconds / decode_steps * 1e3, m.tpot * 1e3,
                m.tpot > 0 ? 1.0 / m.tpot : 0.0);
    std::printf("ITL:              p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                itl.p50 * 1e3, itl.p90 * 1e3, itl.p99 * 1e3, itl.max * 1e3);
  }
  std::printf("end to end:       %.3f ms for %d output tokens (%.1f tokens/s)\n", m.e2e * 1e3,
              m.output_tokens, m.e2e > 0 ? m.output_tokens / m.e2e : 0.0);
  print_step_table(r);
  std::printf("\nNext: chapter 02 keeps each position's keys and values (the KV cache), so a step "
              "forwards one token instead of all of them.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"InferLab chapter 01: the naive generation loop (every step re-processes the "
               "whole sequence)"};
  Options o;
  app.add_option("--model", o.model,
                 "model file (llama2.c format); default stories260K.bin found in "
                 "$INFERLAB_MODELS or models/");
  app.add_option("--tokenizer", o.tokenizer, "tokenizer file; default matches the vocabulary");
  app.add_option("--synthetic", o.synthetic,
                 "run on a generated random-weight model of this shape instead of a file "
                 "(stories260K, stories15M, stories42M, stories110M, llama2-7b, llama3-8b)");
  app.add_option("--prompt", o.prompt, "prompt text")->capture_default_str();
  app.add_option("--steps", o.steps,
                 "positions to forward, prompt included (like llama2.c -n); 0 = the context")
      ->capture_default_str();
  app.add_option("--temperature", o.sampling.temperature, "0 = greedy")->capture_default_str();
  app.add_option("--top-k", o.sampling.top_k, "0 = off")->capture_default_str();
  app.add_option("--top-p", o.sampling.top_p, "1 = off")->capture_default_str();
  app.add_option("--min-p", o.sampling.min_p, "0 = off")->capture_default_str();
  app.add_option("--repetition-penalty", o.sampling.repetition_penalty, "1 = off")
      ->capture_default_str();
  app.add_option("--frequency-penalty", o.sampling.frequency_penalty, "0 = off")
      ->capture_default_str();
  app.add_option("--presence-penalty", o.sampling.presence_penalty, "0 = off")
      ->capture_default_str();
  app.add_option("--seed", o.sampling.seed, "RNG seed")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU threads (0 = OpenMP default)");
  app.add_flag("--json", o.json, "print one JSON object instead of streaming text");
  app.add_option("--dump-logits", o.dump_logits,
                 "write 'pos token logit...' rows for every forwarded position to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  }
}
