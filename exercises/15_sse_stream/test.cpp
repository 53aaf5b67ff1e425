// Exercise 15's test: fixed cases, then random texts (multi-byte characters, stop strings) cut
// into pieces at random byte positions, inside characters and inside stop strings, checked
// against the core's TextStream fed the same bytes.
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "exercise.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/serving/text_stream.hpp"

using inferlab::ex15::sse_stream;

namespace {

std::string text(const std::string& t) {
  return "data: " + nlohmann::json{{"text", t}}.dump() + "\n\n";
}
const std::string kStop = "data: {\"finish_reason\":\"stop\"}\n\n";
const std::string kLength = "data: {\"finish_reason\":\"length\"}\n\n";
const std::string kDone = "data: [DONE]\n\n";

// What the core's TextStream sends after each piece (its bytes fed as byte tokens), then the
// rest at the end: the events the exercise must produce.
std::vector<std::string> reference(const std::vector<std::string>& pieces,
                                   const std::vector<std::string>& stop) {
  static const inferlab::Tokenizer tok = inferlab::Tokenizer::synthetic(512);
  // The stream continues a prompt that ends in "x" (after BOS, llama2.c drops a leading space).
  inferlab::TextStream stream(tok, stop, 3 + 'x');
  std::vector<std::string> events;
  for (const std::string& piece : pieces) {
    std::string sent;
    for (unsigned char c : piece) sent += stream.push(3 + int(c));  // <0x00> is id 3
    if (!sent.empty()) events.push_back(text(sent));
    if (stream.stopped()) {
      events.push_back(kStop);
      events.push_back(kDone);
      return events;
    }
  }
  if (const std::string rest = stream.finish(); !rest.empty()) events.push_back(text(rest));
  events.push_back(kLength);
  events.push_back(kDone);
  return events;
}

}  // namespace

TEST_CASE("ex15: plain text streams one event per piece", "[exercise]") {
  CHECK(sse_stream({"Once", " upon"}, {}) ==
        std::vector<std::string>{text("Once"), text(" upon"), kLength, kDone});
}

TEST_CASE("ex15: half a character waits for its other half", "[exercise]") {
  // "é" = C3 A9, "€" = E2 82 AC
  CHECK(sse_stream({"caf\xC3", "\xA9", "\xE2\x82", "\xAC!"}, {}) ==
        std::vector<std::string>{text("caf"), text("\xC3\xA9"), text("\xE2\x82\xAC!"), kLength,
                                 kDone});
  CHECK(sse_stream({"a", "\xE2\x82"}, {}) ==
        std::vector<std::string>{text("a"), kLength, kDone});  // never completed: dropped
}

TEST_CASE("ex15: a stop string split over pieces is never sent", "[exercise]") {
  CHECK(sse_stream({"a little g", "ir", "l named"}, {"irl"}) ==
        std::vector<std::string>{text("a little g"), kStop, kDone});
  CHECK(sse_stream({"he", "ll", "o"}, {"llo"}) ==
        std::vector<std::string>{text("he"), kStop, kDone});
  CHECK(sse_stream({"S", "T", "x"}, {"STOP"}) ==
        std::vector<std::string>{text("STx"), kLength, kDone});
  CHECK(sse_stream({"ab", "ST"}, {"STOP"}) ==
        std::vector<std::string>{text("ab"), text("ST"), kLength, kDone});
}

TEST_CASE("ex15: adversarial splits agree with the core's TextStream", "[exercise]") {
  std::mt19937 rng(15);
  const std::vector<std::string> alphabet = {"a", "b", " ", "\xC3\xA9", "\xE2\x82\xAC",
                                             "\xF0\x9F\x98\x80", "S", "T"};
  const std::vector<std::vector<std::string>> stops = {
      {}, {"ST"}, {"\xC3\xA9S"}, {"b\xE2\x82\xAC", "TT"}, {"\xF0\x9F\x98\x80 a"}};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string all;
    const int chars = 1 + int(rng() % 20);
    for (int i = 0; i < chars; ++i) all += alphabet[rng() % alphabet.size()];
    std::vector<std::string> pieces;
    for (std::size_t at = 0; at < all.size();) {
      const std::size_t len = 1 + rng() % 4;  // cuts anywhere, inside characters too
      pieces.push_back(all.substr(at, len));
      at += len;
    }
    const std::vector<std::string>& stop = stops[std::size_t(trial) % stops.size()];
    INFO("text " << nlohmann::json(all).dump() << ", " << pieces.size() << " pieces");
    REQUIRE(sse_stream(pieces, stop) == reference(pieces, stop));
  }
}
