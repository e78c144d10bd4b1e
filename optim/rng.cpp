#include "optim/rng.hpp"

#include <cmath>

namespace troupe::optim {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept {
  return (x << k) | (x >> (64 - k));
}

} // namespace

rng::rng(std::uint64_t seed) noexcept {
  for (auto& s : s_)
    s = splitmix64(seed);
}

std::uint64_t rng::next() noexcept {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double rng::uniform() noexcept {
  // The top 53 bits as a multiple of 2^-53.
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double rng::uniform(double lo, double hi) noexcept {
  const double x = lo + (hi - lo) * uniform();
  // Rounding can land exactly on hi; keep the interval half-open.
  return x < hi ? x : std::nextafter(hi, lo);
}

double rng::normal() noexcept {
  constexpr double two_pi = 6.283185307179586476925286766559;
  const double u1 = 1.0 - uniform(); // in (0, 1], so the log is finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
}

std::uint64_t rng::below(std::uint64_t n) noexcept {
  // 2^64 mod n: raw values below it would make small results more likely.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t r = next();
    if (r >= threshold)
      return r % n;
  }
}

} // namespace troupe::optim
