#pragma once

#include <cstdint>

namespace troupe::optim {

/// Small, fast, seedable generator (SplitMix64 seeding a xoshiro256**).
/// Its output is the same on every platform and standard library, which
/// std::uniform_real_distribution does not promise; all randomness in optim/
/// goes through it so that a seed fixes a run bit for bit.
class rng {
public:
  explicit rng(std::uint64_t seed) noexcept;

  /// Next raw 64-bit value.
  std::uint64_t next() noexcept;

  /// Uniform double in [0, 1).
  double uniform() noexcept;

  /// Uniform double in [lo, hi).
  double uniform(double lo, double hi) noexcept;

  /// Standard normal (Box-Muller).
  double normal() noexcept;

  /// Uniform integer in [0, n), n > 0, without modulo bias.
  std::uint64_t below(std::uint64_t n) noexcept;

private:
  std::uint64_t s_[4];
};

} // namespace troupe::optim
