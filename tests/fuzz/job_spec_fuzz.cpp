// The job spec a node reads from its coordinator (apps/job_spec.cpp,
// from_spec). Contract: text is either a spec or refused with
// std::invalid_argument (nothing else escapes); a spec that was read writes
// back to text that reads back to the same spec, so a coordinator can always
// pass on what it accepted.

#include <stdexcept>
#include <string>

#include "apps/train_command.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using troupe::apps::from_spec;
using troupe::apps::to_spec;
using troupe::apps::train_options;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::string text{reinterpret_cast<const char*>(data), size};
  train_options o;
  try {
    o = from_spec(text);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  auto spec = to_spec(o);
  train_options back;
  try {
    back = from_spec(spec);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "spec %s: %s\n", spec.c_str(), e.what());
    FUZZ_CHECK(false, "a spec written from an accepted one is refused");
  }
  FUZZ_CHECK(to_spec(back) == spec, "a spec changes on its way back");
  return 0;
}
