#include "messages/allreduce.hpp"

namespace troupe::messages {

std::string to_string(const ring_chunk_msg& x) {
  const char* phase = x.phase == 0   ? "reduce-scatter"
                      : x.phase == 1 ? "all-gather"
                                     : "unknown phase";
  return "ring_chunk_msg(from " + std::to_string(x.sender) + ", step "
         + std::to_string(x.step) + ", " + phase + " hop "
         + std::to_string(x.hop) + ", chunk " + std::to_string(x.chunk) + ", "
         + std::to_string(x.samples) + " samples, "
         + std::to_string(x.values.size()) + " values"
         + (x.pause_at > 0 ? ", pause after step " + std::to_string(x.pause_at)
                           : std::string{})
         + ")";
}

std::uint64_t wire_size(const ring_chunk_msg& x) {
  return ring_chunk_header_bytes + 4 * std::uint64_t{x.values.size()};
}

} // namespace troupe::messages
