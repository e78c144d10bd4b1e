#include "optim/param_hash.hpp"

#include <cstdint>
#include <cstdio>

namespace troupe::optim {

std::string hash_params(const float* data, std::size_t n) {
  return hash_bytes(data, n * sizeof(float));
}

std::string hash_bytes(const void* data, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  auto bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i)
    h = (h ^ bytes[i]) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(h));
  return buf;
}

} // namespace troupe::optim
