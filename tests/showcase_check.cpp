/// @file showcase_check.cpp
/// @brief `inferlab_showcase_check`: runs a chapter's showcase command with `--json` and checks
/// the direction of the effect the chapter claims, so that every "Run it" command keeps showing
/// its lesson.
///
///     inferlab_showcase_check --expect "/summary/continuous/steps < /summary/static/steps"
///                             -- ch04_continuous_batching --clock sim --json
///
/// An expectation is `TERM OP TERM` with OP one of `<`, `<=`, `>`, `>=`, `==`, `!=`. A term is
/// - a JSON pointer into the output (`/a/b/0/c`), where a `*` segment stands for every element
///   of an array or object and `N:` for the elements from index N on; the expectation must then
///   hold for every value it selects (and there must be at least one);
/// - `sum(P)`, `len(P)`, `min(P)`, `max(P)` of the values a pointer selects;
/// - a number, `true`, `false`, `null` or a "string";
/// - any of them multiplied by a number: `1.5 * /a/b`.
/// Every expectation is printed with the values it compared. The check fails (exit 1) when the
/// command fails or prints no JSON object, or when an expectation does not hold. When the
/// command cannot find its model file it prints SKIPPED and exits with the skip code (77),
/// unless INFERLAB_REQUIRE_MODELS=1. Wall-clock numbers are noisy: expectations should compare
/// counts (tokens, steps) or the simulated clock's times, never real-clock times.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

constexpr int kSkipCode = 77;

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr (also copied to ours)
};

// Runs argv (no shell) and captures its standard output.
CommandResult run_command(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    std::perror("pipe");
    std::exit(1);
  }
  std::FILE* err_file = std::tmpfile();  // stderr goes to a file: two pipes could deadlock
  if (!err_file) {
    std::perror("tmpfile");
    std::exit(1);
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(fileno(err_file), STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(pipe_fds[1]);
  CommandResult r;
  char buf[65536];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0) r.out.append(buf, std::size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::rewind(err_file);
  while ((n = static_cast<ssize_t>(std::fread(buf, 1, sizeof buf, err_file))) > 0)
    r.err.append(buf, std::size_t(n));
  std::fclose(err_file);
  std::fputs(r.err.c_str(), stderr);
  return r;
}

// The values a pointer with `*` and `N:` segments selects, in document order.
void select(const json& node, const std::vector<std::string>& segments, std::size_t i,
            std::vector<json>& out) {
  if (i == segments.size()) {
    out.push_back(node);
    return;
  }
  const std::string& s = segments[i];
  if (s == "*" || (!s.empty() && s.back() == ':' && node.is_array())) {
    std::size_t from = 0;
    if (s != "*") from = std::stoul(s.substr(0, s.size() - 1));
    if (node.is_array()) {
      for (std::size_t k = from; k < node.size(); ++k) select(node[k], segments, i + 1, out);
    } else if (node.is_object()) {
      for (const auto& item : node.items()) select(item.value(), segments, i + 1, out);
    }
    return;
  }
  if (node.is_object() && node.contains(s)) {
    select(node.at(s), segments, i + 1, out);
  } else if (node.is_array() && !s.empty() &&
             s.find_first_not_of("0123456789") == std::string::npos) {
    const std::size_t k = std::stoul(s);
    if (k < node.size()) select(node[k], segments, i + 1, out);
  }
}

std::vector<json> select_pointer(const json& doc, const std::string& pointer) {
  std::vector<std::string> segments;
  std::size_t start = 1;
  while (start <= pointer.size()) {
    const std::size_t end = pointer.find('/', start);
    segments.push_back(
        pointer.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::vector<json> out;
  select(doc, segments, 0, out);
  return out;
}

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t");
  const std::size_t b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A term's values; throws std::runtime_error naming what it could not evaluate.
std::vector<json> evaluate(const json& doc, std::string term) {
  term = trim(term);
  double factor = 1.0;
  bool scaled = false;
  const std::size_t star = term.find(" * ");
  if (star != std::string::npos) {
    factor = std::stod(term.substr(0, star));
    term = trim(term.substr(star + 3));
    scaled = true;
  }
  std::vector<json> values;
  for (const char* fn : {"sum(", "len(", "min(", "max("}) {
    if (term.rfind(fn, 0) == 0 && term.back() == ')') {
      // An array the pointer selects counts as its elements: len(/steps) is the step count.
      std::vector<json> inner;
      for (const json& v : select_pointer(doc, term.substr(4, term.size() - 5))) {
        if (v.is_array())
          inner.insert(inner.end(), v.begin(), v.end());
        else
          inner.push_back(v);
      }
      if (std::string(fn) == "len(") {
        values = {json(inner.size())};
      } else {
        if (inner.empty()) throw std::runtime_error("'" + term + "' selects nothing");
        double acc = std::string(fn) == "sum(" ? 0.0 : inner.front().get<double>();
        for (const json& v : inner) {
          const double x = v.get<double>();
          if (std::string(fn) == "sum(")
            acc += x;
          else if (std::string(fn) == "min(")
            acc = std::min(acc, x);
          else
            acc = std::max(acc, x);
        }
        values = {json(acc)};
      }
      break;
    }
  }
  if (values.empty()) {
    if (!term.empty() && term.front() == '/') {
      values = select_pointer(doc, term);
      if (values.empty()) throw std::runtime_error("'" + term + "' selects nothing");
    } else {
      values = {json::parse(term)};  // a number, true, false, null or a "string"
    }
  }
  if (scaled)
    for (json& v : values) v = factor * v.get<double>();
  return values;
}

bool compare(const json& a, const std::string& op, const json& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    if (op == ">=") return x >= y;
    if (op == "==") return x == y;
    return x != y;
  }
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  throw std::runtime_error("'" + op + "' compares numbers, not " + a.dump() + " and " + b.dump());
}

// Checks one expectation and prints it with its values; returns whether it held.
bool check(const json& doc, const std::string& expectation) {
  for (const char* op : {" <= ", " >= ", " == ", " != ", " < ", " > "}) {
    const std::size_t at = expectation.find(op);
    if (at == std::string::npos) continue;
    const std::string o = trim(op);
    try {
      const std::vector<json> lhs = evaluate(doc, expectation.substr(0, at));
      const std::vector<json> rhs = evaluate(doc, expectation.substr(at + std::strlen(op)));
      if (lhs.size() != 1 && rhs.size() != 1 && lhs.size() != rhs.size())
        throw std::runtime_error("the two sides select different numbers of values");
      bool ok = true;
      std::size_t failed = 0;
      const std::size_t n = std::max(lhs.size(), rhs.size());
      for (std::size_t k = 0; k < n; ++k) {
        const json& a = lhs[lhs.size() == 1 ? 0 : k];
        const json& b = rhs[rhs.size() == 1 ? 0 : k];
        if (!compare(a, o, b)) {
          if (ok) failed = k;
          ok = false;
        }
      }
      const json& a = lhs[lhs.size() == 1 ? 0 : failed];
      const json& b = rhs[rhs.size() == 1 ? 0 : failed];
      std::printf(
          "%s  %s   [%s %s %s%s]\n", ok ? "ok  " : "FAIL", expectation.c_str(), a.dump().c_str(),
          o.c_str(), b.dump().c_str(),
          n > 1 ? (ok ? (", all " + std::to_string(n)).c_str()
                      : (", value " + std::to_string(failed) + " of " + std::to_string(n)).c_str())
                : "");
      return ok;
    } catch (const std::exception& e) {
      std::printf("FAIL  %s   [%s]\n", expectation.c_str(), e.what());
      return false;
    }
  }
  std::printf("FAIL  %s   [no comparison operator: write TERM OP TERM with spaces around OP]\n",
              expectation.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> expectations, command;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--expect" && i + 1 < argc) {
      expectations.push_back(argv[++i]);
    } else if (a == "--") {
      for (int k = i + 1; k < argc; ++k) command.push_back(argv[k]);
      break;
    } else {
      std::fprintf(
          stderr, "usage: inferlab_showcase_check --expect 'TERM OP TERM'... -- COMMAND ARGS...\n");
      return 2;
    }
  }
  if (command.empty() || expectations.empty()) {
    std::fprintf(stderr,
                 "usage: inferlab_showcase_check --expect 'TERM OP TERM'... -- COMMAND ARGS...\n");
    return 2;
  }
  std::printf("showcase:");
  for (const std::string& a : command) std::printf(" %s", a.c_str());
  std::printf("\n");
  std::fflush(stdout);
  const CommandResult r = run_command(command);
  if (r.exit_code != 0) {
    // The model-file search's message (model_files.cpp): a machine without the models skips.
    const char* require = std::getenv("INFERLAB_REQUIRE_MODELS");
    if (r.err.find("not found (searched") != std::string::npos &&
        !(require && std::string(require) == "1")) {
      std::printf("SKIPPED: the model file was not found (set INFERLAB_MODELS)\n");
      return kSkipCode;
    }
    std::printf("FAIL: the command exited with %d\n", r.exit_code);
    return 1;
  }
  const std::size_t brace = r.out.find('{');
  json doc;
  try {
    if (brace == std::string::npos) throw std::runtime_error("no JSON object in the output");
    doc = json::parse(r.out.substr(brace));
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  bool all = true;
  for (const std::string& e : expectations) all = check(doc, e) && all;
  std::printf("%s\n", all ? "showcase claim holds" : "showcase claim DOES NOT hold");
  return all ? 0 : 1;
}
