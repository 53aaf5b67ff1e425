// Fuzz target: read_workload_file on arbitrary bytes. Anything malformed must be refused with
// inferlab::Error; what is accepted must keep the reader's promises (sorted finite arrivals in
// range, max_tokens >= 1, exactly one of prompt and prompt_len, valid sampling settings).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "inferlab/base/error.hpp"
#include "inferlab/serving/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const std::vector<inferlab::Request> requests = inferlab::read_workload_file(in, "fuzz.jsonl");
    double last = 0.0;
    for (const inferlab::Request& r : requests) {
      if (!(std::isfinite(r.arrival) && r.arrival >= last &&
            r.arrival <= inferlab::kMaxArrivalSeconds))
        std::abort();
      last = r.arrival;
      if (r.max_tokens < 1) std::abort();
      // A prompt by length (no text) or by text (prompt_len 0; the text may be empty).
      if (r.prompt_len < 0 || (r.prompt_len > 0 && !r.prompt.empty())) std::abort();
      r.sampling.validate();  // throws inferlab::Error, which the reader should have thrown
    }
  } catch (const inferlab::Error&) {
  }
  return 0;
}
