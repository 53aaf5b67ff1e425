// The MaskBench protocol: compile, then check every token of every instance against its mask.
#include "inferlab/constrain/maskbench.hpp"

#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/json_input.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/constrain/json_schema.hpp"
#include "inferlab/constrain/parser.hpp"

namespace inferlab {

using Json = nlohmann::ordered_json;

namespace {
double since_us(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}
// Microseconds on the chosen clock: wall time (the protocol's), or this thread's CPU time,
// which a machine shared with other jobs does not inflate.
double clock_us(bool cpu) {
  if (cpu) {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
  }
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The largest MaskBench file read (the development sample's largest is under 2 MB).
constexpr std::size_t kMaxMaskBenchFileBytes = std::size_t{64} << 20;

// Why `file` is not a MaskBench file (empty when it is one): the schema and a list of tests,
// each an object with a boolean "valid" and a "data" (and a string "description", if any).
std::string maskbench_file_problem(const Json& file) {
  if (!file.is_object() || !file.contains("schema") || !file.contains("tests") ||
      !file["tests"].is_array()) {
    return "not a MaskBench file (needs \"schema\" and \"tests\", an array)";
  }
  for (std::size_t i = 0; i < file["tests"].size(); ++i) {
    const Json& t = file["tests"][i];
    if (!t.is_object()) return fmt::format("test {} is not an object", i);
    if (!t.contains("valid") || !t["valid"].is_boolean())
      return fmt::format("test {} has no boolean \"valid\"", i);
    if (!t.contains("data")) return fmt::format("test {} has no \"data\"", i);
    if (t.contains("description") && !t["description"].is_string())
      return fmt::format("test {}'s \"description\" is not a string", i);
  }
  return "";
}
}  // namespace

MaskBenchVocab::MaskBenchVocab(const Tokenizer& tok)
    : tokenizer(&tok), token_bytes(token_byte_strings(tok)), trie(token_bytes) {
  // Vocabulary preprocessing, done once for all schemas (before the per-file processes fork).
  trie.loop_tables(TokenTrie::json_string_loop(), true);
}

Json MaskBenchResult::to_json() const {
  Json j;
  j["id"] = id;
  if (!file_error.empty()) j["file_error"] = file_error;
  if (!compile_error.empty()) j["compile_error"] = compile_error;
  if (!validation_error.empty()) j["validation_error"] = validation_error;
  if (!invalid_accepted_tests.empty()) j["invalid_accepted"] = invalid_accepted_tests;
  if (!valid_rejected_tests.empty()) j["valid_rejected"] = valid_rejected_tests;
  if (!crash.empty()) j["crash"] = crash;
  j["num_valid_tests"] = num_valid_tests;
  j["num_invalid_tests"] = num_invalid_tests;
  j["ttfm_us"] = std::round(ttfm_us * 10) / 10;
  double sum = 0, mx = 0;
  for (const double m : masks_us) {
    sum += m;
    mx = std::max(mx, m);
  }
  j["masks_us"] = std::round(sum * 10) / 10;
  j["max_mask_us"] = std::round(mx * 10) / 10;
  j["num_tokens"] = num_tokens;
  return j;
}

MaskBenchResult run_maskbench(const Json& file, const std::string& id, const MaskBenchVocab& vocab,
                              double time_limit_s, bool cpu_clock) {
  MaskBenchResult r;
  r.id = id;
  r.file_error = maskbench_file_problem(file);
  if (!r.file_error.empty()) return r;
  for (const auto& t : file["tests"]) {
    if (t["valid"].get<bool>())
      ++r.num_valid_tests;
    else
      ++r.num_invalid_tests;
  }
  const auto start = std::chrono::steady_clock::now();
  const double start_clock = clock_us(cpu_clock);
  std::unique_ptr<PushdownParser> parser;
  std::unique_ptr<MaskComputer> masks;
  try {
    // MaskBench's labels assert `format` (as llguidance does): the default limits.
    const Grammar g = json_schema_grammar(file["schema"]);
    parser = std::make_unique<PushdownParser>(g);
    masks = std::make_unique<MaskComputer>(*parser, vocab.trie, vocab.token_bytes, kEosToken);
    masks->mask(parser->initial_state());
    r.ttfm_us = clock_us(cpu_clock) - start_clock;
  } catch (const Error& e) {
    r.compile_error = e.what();
    return r;
  }
  const double limit_us = time_limit_s * 1e6;
  std::size_t index = 0;
  for (const auto& t : file["tests"]) {
    const bool valid = t["valid"].get<bool>();
    const std::string name = t.contains("description") ? t["description"].get<std::string>()
                                                       : fmt::format("test {}", index);
    ++index;
    const std::string text = python_json_dumps(t["data"]);
    std::vector<int> tokens = vocab.tokenizer->encode(text, false, false, false);
    tokens.push_back(kEosToken);
    int state = parser->initial_state();
    bool accepted = true;
    try {
      for (const int tok : tokens) {
        const bool cached = masks->cached(state);
        const double t0 = clock_us(cpu_clock);
        const TokenMask& m = masks->mask(state);
        r.masks_us.push_back(clock_us(cpu_clock) - t0);
        if (!cached) r.first_masks_us.push_back(r.masks_us.back());
        ++r.num_tokens;
        if (!m.allowed(tok)) {
          accepted = false;
          break;
        }
        if (tok != kEosToken)
          state = parser->advance(state, vocab.token_bytes[static_cast<std::size_t>(tok)]);
        if (since_us(start) > limit_us) {
          r.crash = fmt::format("time limit of {} s exceeded", time_limit_s);
          return r;
        }
      }
    } catch (const Error& e) {
      r.crash = fmt::format("error in test '{}': {}", name, e.what());
      return r;
    }
    if (accepted != valid) {
      if (r.validation_error.empty()) {
        r.validation_error = fmt::format("{} test '{}' was {}", valid ? "valid" : "invalid", name,
                                         accepted ? "accepted" : "rejected");
      }
      (valid ? r.valid_rejected_tests : r.invalid_accepted_tests).push_back(name);
      (valid ? r.valid_rejected : r.invalid_accepted) = true;
    }
  }
  return r;
}

MaskBenchResult run_maskbench_isolated(const std::string& path, const MaskBenchVocab& vocab,
                                       double time_limit_s, bool cpu_clock) {
  const std::string id = std::filesystem::path(path).filename().string();
  MaskBenchResult r;
  r.id = id;
  Json file;
  try {
    file = parse_json_input(read_regular_file(path, "MaskBench file", kMaxMaskBenchFileBytes),
                            fmt::format("MaskBench file '{}'", path));
  } catch (const Error& e) {
    r.file_error = e.what();
    return r;
  }
  int fds[2];
  if (pipe(fds) != 0) return run_maskbench(file, id, vocab, time_limit_s, cpu_clock);
  std::fflush(stdout);
  // Hand the heap's free pages back first: the child's allocations then map fresh pages
  // instead of copying this process's (copy-on-write), which its mask times would include
  // and which a server that does not fork never pays.
  malloc_trim(0);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_maskbench(file, id, vocab, time_limit_s, cpu_clock);
  }
  if (pid == 0) {  // child: run, send the result (with every mask time) back, exit
    close(fds[0]);
    // On a thread of its own, so that malloc gives it an arena of its own: fresh pages, not
    // the free chunks scattered through the pages this process shares with the parent (copy
    // on write). Those grow with the parent's heap as the run goes on, so without the thread
    // a file's time to first mask depended on how many files came before it.
    MaskBenchResult c;
    std::thread([&] { c = run_maskbench(file, id, vocab, time_limit_s, cpu_clock); }).join();
    Json j = c.to_json();
    j["masks"] = c.masks_us;
    j["first_masks"] = c.first_masks_us;
    const std::string s = j.dump();
    std::size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = write(fds[1], s.data() + off, s.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string data;
  const auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  char buf[65536];
  while (true) {
    const double left_ms = (time_limit_s + 5) * 1e3 - since_us(start) / 1e3;
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int pr = poll(&p, 1, static_cast<int>(std::min(left_ms, 1e9)));
    if (pr == 0) {
      timed_out = true;
      break;
    }
    if (pr < 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) {
    r.crash = fmt::format("killed after the time limit of {} s", time_limit_s);
    return r;
  }
  try {
    const Json j = Json::parse(data);
    r.file_error = j.value("file_error", "");
    r.compile_error = j.value("compile_error", "");
    r.validation_error = j.value("validation_error", "");
    r.crash = j.value("crash", "");
    r.num_valid_tests = j["num_valid_tests"];
    r.num_invalid_tests = j["num_invalid_tests"];
    r.ttfm_us = j["ttfm_us"];
    r.masks_us = j["masks"].get<std::vector<double>>();
    r.first_masks_us = j["first_masks"].get<std::vector<double>>();
    r.num_tokens = j["num_tokens"];
    r.invalid_accepted_tests = j.value("invalid_accepted", std::vector<std::string>{});
    r.valid_rejected_tests = j.value("valid_rejected", std::vector<std::string>{});
    r.invalid_accepted = !r.invalid_accepted_tests.empty();
    r.valid_rejected = !r.valid_rejected_tests.empty();
  } catch (const std::exception&) {
    r.crash = WIFSIGNALED(status)
                  ? fmt::format("crashed with signal {}", WTERMSIG(status))
                  : fmt::format("exited with status {} without a result", WEXITSTATUS(status));
  }
  return r;
}

Json maskbench_summary(const std::vector<MaskBenchResult>& results) {
  std::vector<double> masks, first, ttfm;
  int passing = 0, compile_errors = 0, validation_errors = 0, crashes = 0, invalid_accepted = 0,
      valid_rejected = 0, file_errors = 0;
  for (const auto& r : results) {
    if (!r.file_error.empty())
      ++file_errors;
    else if (!r.crash.empty())
      ++crashes;
    else if (!r.compile_error.empty())
      ++compile_errors;
    else if (!r.validation_error.empty())
      ++validation_errors;
    else
      ++passing;
    if (r.invalid_accepted) ++invalid_accepted;
    if (r.valid_rejected) ++valid_rejected;
    masks.insert(masks.end(), r.masks_us.begin(), r.masks_us.end());
    first.insert(first.end(), r.first_masks_us.begin(), r.first_masks_us.end());
    if (r.file_error.empty() && r.compile_error.empty() && r.crash.empty())
      ttfm.push_back(r.ttfm_us);
  }
  auto pct = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(
        v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
    return std::round(v[i] * 100) / 100;
  };
  Json s;
  s["files"] = results.size();
  s["passing"] = passing;
  s["compile_errors"] = compile_errors;
  s["validation_errors"] = validation_errors;
  s["invalid_accepted"] = invalid_accepted;
  s["valid_rejected"] = valid_rejected;
  s["file_errors"] = file_errors;
  s["crashes"] = crashes;
  s["mask_us_p50"] = pct(masks, 0.5);
  s["mask_us_p99"] = pct(masks, 0.99);
  s["ttfm_us_p50"] = pct(ttfm, 0.5);
  // Masks found in the per-state cache cost a lookup; these are the ones computed by a walk.
  s["computed_mask_us_p50"] = pct(first, 0.5);
  s["computed_mask_us_p99"] = pct(first, 0.99);
  s["computed_masks"] = first.size();
  s["masks"] = masks.size();
  return Json{{"summary", s}};
}

std::vector<Json> maskbench_from_test_suite(const Json& suite) {
  if (!suite.is_array()) throw Error("a JSON-Schema-Test-Suite file is an array of groups");
  std::vector<Json> out;
  for (const auto& group : suite) {
    Json f;
    f["description"] = group.value("description", "");
    f["schema"] = group.at("schema");
    f["tests"] = Json::array();
    for (const auto& t : group.at("tests")) {
      f["tests"].push_back(Json{{"description", t.value("description", "")},
                                {"valid", t.at("valid")},
                                {"data", t.at("data")}});
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<std::string> list_json_files(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  std::set<std::filesystem::path> seen;  // canonical paths: a file named twice runs once
  auto add = [&](const std::filesystem::path& f) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(f, ec);
    if (seen.insert(ec ? f : canonical).second) out.push_back(f.string());
  };
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".json")
          found.push_back(e.path().string());
      }
      if (ec) throw ParameterError("maskbench", fmt::format("'{}': {}", p, ec.message()));
      if (found.empty())
        throw ParameterError("maskbench", fmt::format("'{}': the folder holds no *.json file", p));
      std::sort(found.begin(), found.end());
      for (const auto& f : found) add(f);
    } else if (std::filesystem::exists(p, ec)) {
      add(p);
    } else {
      throw ParameterError("maskbench", fmt::format("'{}' does not exist", p));
    }
  }
  return out;
}

}  // namespace inferlab
