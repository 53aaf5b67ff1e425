// Exercise 15, the learner's file: the SSE events of a token stream, with UTF-8 holdback and
// stop strings. The statement is in README.md; the contract is in exercise.hpp.
// Build and run the test with the exercise variant:
//   cmake --preset exercises && cmake --build --preset exercises --target ex15_sse_stream_test
//   ./build-exercises/bin/ex15_sse_stream_test

#include "exercise.hpp"

namespace inferlab::ex15 {

std::vector<std::string> sse_stream(const std::vector<std::string>& pieces,
                                    const std::vector<std::string>& stop) {
  // TODO(exercise): keep the bytes of an incomplete character until its last byte arrives.
  // TODO(exercise): hold back the longest end of the text that could start a stop string;
  //                 on a stop string, send what precedes it and finish with "stop".
  // TODO(exercise): one text event per piece at most, then the finish event, then [DONE].
  (void)pieces;
  (void)stop;
  return {};
}

}  // namespace inferlab::ex15
