#pragma once

#include <cstddef>
#include <string>

namespace troupe::optim {

/// FNV-1a over the bytes of n floats, as 16 hex digits: equal hashes mean
/// bitwise-equal parameters (the `param_hash` of every run's JSON).
std::string hash_params(const float* data, std::size_t n);

/// FNV-1a over `n` bytes, as 16 hex digits.
std::string hash_bytes(const void* data, std::size_t n);

} // namespace troupe::optim
