// Tests of the checks every entry point shares: regular files only, bounded reads and lines,
// atomic outputs, the flag validators, allocation sizes, UTF-8; and of what they protect: the
// priority-queue BPE against run.c's quadratic one, 64-bit workload-file integers, finite
// weights.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bpe_reference.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/base/safe_files.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/serving/workload.hpp"
#include "test_support.hpp"

using namespace inferlab;
namespace fs = std::filesystem;

namespace {

// A scratch folder holding a FIFO, a directory, a symlink loop and a regular file.
struct Fixtures {
  fs::path dir;
  Fixtures() {
    dir = fs::temp_directory_path() / ("inferlab_test_checks_" + std::to_string(::getpid()));
    fs::create_directories(dir / "sub");
    ::mkfifo((dir / "fifo").c_str(), 0600);
    fs::create_symlink(dir / "loop_b", dir / "loop_a");
    fs::create_symlink(dir / "loop_a", dir / "loop_b");
    std::ofstream(dir / "file.txt") << "old";
  }
  ~Fixtures() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string at(const char* name) const { return (dir / name).string(); }
  std::size_t entries() const {
    return static_cast<std::size_t>(
        std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// What a CLI11 validator says about a value ("" when it accepts it).
std::string verdict(const CLI::Validator& v, std::string value) { return v(value); }

}  // namespace

TEST_CASE("only regular files are opened: FIFO, directory, device and symlink loop are named",
          "[unit][checks]") {
  const Fixtures f;
  CHECK_THAT(error_of([&] { require_regular_file(f.at("fifo"), "model file"); }),
             Catch::Contains("model file '") && Catch::Contains("is a FIFO (named pipe)"));
  CHECK_THAT(error_of([&] { require_regular_file(f.at("sub"), "x"); }),
             Catch::Contains("is a directory"));
  CHECK_THAT(error_of([&] { require_regular_file("/dev/zero", "x"); }),
             Catch::Contains("is a character device"));
  CHECK_THAT(error_of([&] { require_regular_file(f.at("loop_a"), "x"); }),
             Catch::Contains("symlink loop"));
  CHECK_THAT(error_of([&] { require_regular_file(f.at("none"), "x"); }),
             Catch::Contains("not found"));
  CHECK_NOTHROW(require_regular_file(f.at("file.txt"), "x"));
  // The loaders use it: a FIFO is refused at once instead of blocking in open().
  CHECK_THAT(error_of([&] { Model::load(f.at("fifo")); }), Catch::Contains("FIFO"));
  CHECK_THAT(error_of([&] { Tokenizer::load(f.at("fifo")); }), Catch::Contains("FIFO"));
  CHECK_THAT(error_of([&] { load_workload_file(f.at("sub")); }), Catch::Contains("is a directory"));
}

TEST_CASE("reads are bounded: a file over the limit and a line over the limit are refused",
          "[unit][checks]") {
  const Fixtures f;
  CHECK(read_regular_file(f.at("file.txt"), "x", 3) == "old");
  CHECK_THAT(error_of([&] { read_regular_file(f.at("file.txt"), "x", 2); }),
             Catch::Contains("3 bytes, more than the limit of 2 bytes"));
  std::istringstream in("ab\ncdef\n\nlast");
  std::string line;
  CHECK(read_bounded_line(in, line, 3));
  CHECK(line == "ab");
  CHECK_THAT(error_of([&] { read_bounded_line(in, line, 3); }),
             Catch::Contains("longer than the limit of 3 bytes"));
  std::istringstream in2("x\n\nlast");
  CHECK(read_bounded_line(in2, line, 8));
  CHECK(read_bounded_line(in2, line, 8));
  CHECK(line.empty());
  CHECK(read_bounded_line(in2, line, 8));
  CHECK(line == "last");
  CHECK_FALSE(read_bounded_line(in2, line, 8));
}

TEST_CASE("outputs are all or nothing: a file not committed leaves no trace, the old file stays",
          "[unit][checks]") {
  const Fixtures f;
  const std::size_t before = f.entries();
  {
    OutputFile out(f.at("file.txt"), "--plot");
    out.stream() << "half of a new";
  }  // an exception would get here without commit()
  CHECK(f.entries() == before);
  CHECK(read_regular_file(f.at("file.txt"), "x", 100) == "old");
  write_file_atomically(f.at("file.txt"), "new", "--plot");
  CHECK(read_regular_file(f.at("file.txt"), "x", 100) == "new");
  CHECK(f.entries() == before);
  // Paths that cannot take an output are refused before any work, naming the flag.
  CHECK_THAT(error_of([&] { require_writable_output(f.at("sub"), "--plot"); }),
             Catch::StartsWith("--plot '") && Catch::Contains("is a directory"));
  CHECK_THAT(error_of([&] { require_writable_output(f.at("fifo"), "--perfetto"); }),
             Catch::Contains("FIFO"));
  CHECK_THAT(error_of([&] { require_writable_output(f.at("nowhere/x.svg"), "--plot"); }),
             Catch::Contains("folder") && Catch::Contains("not found"));
  CHECK_NOTHROW(require_writable_output(f.at("fresh.svg"), "--plot"));
}

TEST_CASE("flag validators: ranges named, NaN and infinities refused, seeds read as 64 bits",
          "[unit][checks]") {
  const CLI::Validator reps = integer_in(1, 1000);
  CHECK(verdict(reps, "1").empty());
  CHECK(verdict(reps, "1000").empty());
  CHECK_THAT(verdict(reps, "0"), Catch::Contains("0 is outside [1, 1000]"));
  CHECK_THAT(verdict(reps, "2147483647"), Catch::Contains("outside"));
  CHECK_THAT(verdict(reps, "99999999999999999999"), Catch::Contains("outside"));
  CHECK_THAT(verdict(reps, "nan"), Catch::Contains("not an integer"));
  CHECK_THAT(verdict(reps, "1e3"), Catch::Contains("not an integer"));
  const CLI::Validator rate = finite_in(0.0, 1e6);
  CHECK(verdict(rate, "0").empty());
  CHECK(verdict(rate, "2.5").empty());
  for (const char* bad : {"nan", "inf", "-inf", "-1", "1e7", "1e-320", "abc", ""})
    CHECK_FALSE(verdict(rate, bad).empty());
  CHECK_FALSE(verdict(finite_in(0.0, 1.0, /*lo_open=*/true), "0").empty());
  const CLI::Validator seed = unsigned_64();
  CHECK(verdict(seed, "0").empty());
  CHECK(verdict(seed, "18446744073709551615").empty());
  for (const char* bad : {"-1", "18446744073709551616", "+1", "1.0", "nan", ""})
    CHECK_FALSE(verdict(seed, bad).empty());
  CHECK(max_threads() >= kThreadsPerCore);
  CHECK_FALSE(verdict(thread_count(), std::to_string(max_threads() + 1)).empty());
  CHECK(verdict(thread_count(), "0").empty());
}

TEST_CASE("a flag that does nothing in the mode chosen is refused, naming the flag and the mode",
          "[unit][checks]") {
  CLI::App app;
  int block_size = 16;
  std::string allocator = "both";
  app.add_option("--block-size", block_size);
  app.add_option("--allocator", allocator);
  const char* argv[] = {"x", "--allocator", "contiguous", "--block-size", "32"};
  app.parse(5, const_cast<char**>(argv));
  const std::vector<FlagScope> scopes = {
      {"--allocator", true, "always", "-"},
      {"--block-size", allocator != "contiguous", "with --allocator paged or both",
       "--allocator " + allocator}};
  CHECK_THROWS_WITH(refuse_inapplicable_flags(app, scopes),
                    "--block-size applies only with --allocator paged or both, not --allocator "
                    "contiguous");
  // A flag left at its default is not refused, whatever the mode.
  CLI::App quiet;
  quiet.add_option("--block-size", block_size);
  quiet.parse(1, const_cast<char**>(argv));
  CHECK_NOTHROW(refuse_inapplicable_flags(quiet, scopes));
  // The rule's other wordings: no mode, no place where it applies, a reason first.
  CHECK_THROWS_WITH(refuse_inapplicable_flags(app, {{"--block-size", false, "with --chat", ""}}),
                    "--block-size applies only with --chat");
  CHECK_THROWS_WITH(refuse_inapplicable_flags(app, {{"--block-size", false, "", "--chat"}}),
                    "--block-size does not apply to --chat");
  CHECK_THROWS_WITH(
      refuse_inapplicable_flags(app, {{"--block-size", false, "to --clock real", "", "pages"}}),
      "--block-size pages: it applies only to --clock real");
}

TEST_CASE("an error message is printed as one line, control bytes escaped",
          "[unit][checks]") {
  // Quoted input may hold a terminal escape sequence: it is shown, never sent to the terminal.
  const Error e("bad \x1b[31mbyte\nnext line");
  CHECK(flag_error_message(nullptr, e) == "bad \\x1B[31mbyte; next line");
}

TEST_CASE("a NUL byte in an error message is shown, and the text after it kept",
          "[unit][checks]") {
  using namespace std::string_literals;
  const Error e("rule 'a\0b' is not defined"s);
  CHECK(std::string(e.what()) == "rule 'a\\0b' is not defined");
  CHECK(flag_error_message(nullptr, e) == "rule 'a\\0b' is not defined");
  const ParameterError p("block_size", "7\0x: must be a power of two"s);
  CHECK(p.problem() == "7\\0x: must be a power of two");
  CHECK(std::string(p.what()) == "block_size 7\\0x: must be a power of two");
}

TEST_CASE("allocation sizes are checked before trying, naming what and how big", "[unit][checks]") {
  CHECK_NOTHROW(require_allocation(1024.0, "a small buffer"));
  CHECK_THAT(error_of([] { require_allocation(1e30, "the universe"); }),
             Catch::StartsWith("the universe needs") && Catch::Contains("more than the"));
  CHECK_THROWS(require_allocation(std::nan(""), "NaN bytes"));
  ModelConfig c = named_config("llama2-7b");
  c.seq_len = 1 << 30;  // a petabyte of keys and values
  CHECK_THAT(error_of([&] { KVCache cache(c, 0); }),
             Catch::Contains("KV cache for a context of 1073741824 tokens needs"));
}

TEST_CASE("UTF-8 validation finds the first bad byte", "[unit][checks]") {
  CHECK(invalid_utf8_offset("plain ascii") == std::string_view::npos);
  CHECK(invalid_utf8_offset("na\xC3\xAFve \xF0\x9F\xA6\x99") == std::string_view::npos);
  CHECK(invalid_utf8_offset("a\xFF") == 1);
  CHECK(invalid_utf8_offset("ab\xC3") == 2);            // truncated
  CHECK(invalid_utf8_offset("\xC0\xAF") == 0);          // overlong
  CHECK(invalid_utf8_offset("x\xED\xA0\x80") == 1);     // a UTF-16 surrogate
  CHECK(invalid_utf8_offset("\xF4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK_THAT(error_of([] { require_utf8("a\xFF", "--prompt"); }),
             Catch::Equals("--prompt is not valid UTF-8 (byte 1: 0xFF)"));
}

TEST_CASE("workload-file integers are read as 64 bits and range-checked, never wrapped",
          "[unit][checks][workload]") {
  auto error_of_line = [](const std::string& line) {
    std::istringstream in(line);
    return error_of([&] { read_workload_file(in, "t.jsonl"); });
  };
  CHECK_THAT(
      error_of_line("{\"prompt_len\": 8, \"max_tokens\": 4294967304}"),
      Catch::Contains("t.jsonl:1:") && Catch::Contains("4294967304 is outside [1, 2147483647]"));
  CHECK_THAT(error_of_line("{\"prompt_len\": 4294967297, \"max_tokens\": 4}"),
             Catch::Contains("prompt_len"));
  CHECK_THAT(error_of_line("{\"prompt_len\": 8, \"max_tokens\": 4, \"top_k\": -4294967297}"),
             Catch::Contains("top_k"));
  CHECK_THAT(error_of_line("{\"prompt_len\": 8, \"max_tokens\": 1e12}"),
             Catch::Contains("must be an integer"));
  CHECK_THAT(error_of_line("{\"prompt_len\": 8, \"max_tokens\": 4, \"arrival\": 1e308}"),
             Catch::Contains("outside [0, 86400]"));
  CHECK_THAT(error_of_line("{\"prompt_len\": 8, \"max_tokens\": 4, \"temperature\": 1e999}"),
             Catch::Contains("t.jsonl:1:"));
  std::istringstream ok("{\"prompt_len\": 8, \"max_tokens\": 4, \"seed\": 18446744073709551615}");
  const std::vector<Request> r = read_workload_file(ok, "t.jsonl");
  CHECK(r.at(0).sampling.seed == std::numeric_limits<std::uint64_t>::max());
  std::istringstream huge(std::string(kMaxTraceLineBytes + 1, ' '));
  CHECK_THAT(error_of([&] { read_workload_file(huge, "t.jsonl"); }),
             Catch::Contains("t.jsonl:1: line longer than the limit"));
  WorkloadSpec spec;
  spec.rate = 1e-300;
  CHECK_THAT(error_of([&] { generate_workload(spec); }),
             Catch::Contains("after the limit of 86400 s"));
  spec.rate = std::nan("");
  CHECK_THROWS_AS(generate_workload(spec), Error);
}

TEST_CASE("a NaN or infinite weight is refused at load, naming the tensor and the index",
          "[unit][checks][model]") {
  const Fixtures f;
  ModelConfig c = named_config("stories260K");
  c.n_layers = 2;
  c.seq_len = 16;
  for (const float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    Model m = make_synthetic_model(c, {}, "tiny");
    m.save(f.at("model.bin"));
    // Patch one float of the second layer's wq: index L*D (after rms_att) + D*D + 5.
    const std::size_t D = c.dim, V = c.vocab_size;
    const std::size_t index = D * D + 5;
    const std::size_t offset = 28 + 4 * (V * D + 2 * D + index);
    std::fstream file(f.at("model.bin"), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(offset));
    file.write(reinterpret_cast<const char*>(&bad), sizeof bad);
    file.close();
    CHECK_THAT(error_of([&] { Model::load(f.at("model.bin")); }),
               Catch::Contains("tensor wq holds") &&
                   Catch::Contains("at index " + std::to_string(index)) &&
                   Catch::Contains("(layer 1)"));
  }
}

TEST_CASE("the priority-queue BPE gives exactly run.c's ids", "[unit][checks][tokenizer]") {
  std::vector<Tokenizer> tokenizers;
  tokenizers.push_back(Tokenizer::synthetic(2000));
  for (const char* name : {"tok512.bin", "tokenizer.bin"}) {
    const fs::path path = test::models_dir() / name;
    if (fs::exists(path)) tokenizers.push_back(Tokenizer::load(path.string()));
  }
  // Texts: random mixes of letters, spaces, repeated runs (long merge chains, many equal
  // scores) and multi-byte characters, some broken.
  const std::vector<std::string> atoms = {
      "a",        "b",    "e",   "t",    "h",        " ",
      "  ",       "the",  "ing", "aaaa", "\xC3\xA9", "\xF0\x9F\xA6\x99",
      "\xE2\x82", "\xFF", "\n",  "Once", " upon",    " a",
      " time",    "0",    "12",  ",",    "."};
  std::mt19937 rng(12345);
  for (const Tokenizer& t : tokenizers) {
    for (int trial = 0; trial < 300; ++trial) {
      std::string text;
      const int n = static_cast<int>(rng() % 60);
      for (int i = 0; i < n; ++i) text += atoms[rng() % atoms.size()];
      INFO("text: '" << text << "'");
      REQUIRE(t.encode(text) == test::reference_encode(t, text));
    }
    const std::string run(3000, 'a');
    CHECK(t.encode(run) == test::reference_encode(t, run));
  }
}
