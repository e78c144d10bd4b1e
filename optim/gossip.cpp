#include "optim/gossip.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace troupe::optim {

namespace {

/// The exponential graph's offsets 2^0 .. 2^floor(log2(n - 1)).
std::vector<std::uint32_t> offsets(std::uint32_t n) {
  std::vector<std::uint32_t> out;
  for (std::uint64_t o = 1; n >= 2 && o <= n - 1; o *= 2)
    out.push_back(static_cast<std::uint32_t>(o));
  return out;
}

/// The offsets used at iteration k.
std::vector<std::uint32_t> offsets_at(std::uint64_t k, std::uint32_t n,
                                      std::uint32_t peers) {
  auto all = offsets(n);
  std::vector<std::uint32_t> out;
  if (all.empty() || peers == 0)
    return out;
  auto l = all.size();
  auto count = std::min<std::size_t>(peers, l);
  for (std::size_t j = 0; j < count; ++j)
    out.push_back(all[(k * count + j) % l]);
  return out;
}

} // namespace

std::vector<std::uint32_t> exponential_out_peers(std::uint32_t rank,
                                                 std::uint64_t k,
                                                 std::uint32_t n,
                                                 std::uint32_t peers) {
  std::vector<std::uint32_t> out;
  for (auto o : offsets_at(k, n, peers))
    out.push_back(static_cast<std::uint32_t>((std::uint64_t{rank} + o) % n));
  return out;
}

std::vector<std::uint32_t> exponential_in_peers(std::uint32_t rank,
                                                std::uint64_t k,
                                                std::uint32_t n,
                                                std::uint32_t peers) {
  std::vector<std::uint32_t> in;
  for (auto o : offsets_at(k, n, peers))
    in.push_back(
        static_cast<std::uint32_t>((std::uint64_t{rank} + n - o % n) % n));
  return in;
}

std::vector<std::uint32_t> exponential_neighbours(std::uint32_t rank,
                                                  std::uint32_t n) {
  std::vector<std::uint32_t> out;
  if (rank >= n)
    return out;
  for (auto o : offsets(n)) {
    out.push_back(static_cast<std::uint32_t>((std::uint64_t{rank} + o) % n));
    out.push_back(
        static_cast<std::uint32_t>((std::uint64_t{rank} + n - o) % n));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), rank), out.end());
  return out;
}

push_sum_share push_sum_split(push_sum_state& s, std::size_t out_degree) {
  auto p = 1.0 / static_cast<double>(out_degree + 1);
  auto pf = static_cast<float>(p);
  for (auto& v : s.x)
    v *= pf;
  s.w *= p;
  return {s.x, s.w};
}

void push_sum_mix(push_sum_state& s, const push_sum_share& share) {
  if (share.x.size() != s.x.size())
    throw std::invalid_argument(
        "push-sum share of " + std::to_string(share.x.size())
        + " values for a model of " + std::to_string(s.x.size()));
  if (!std::isfinite(share.w) || !(share.w > 0)
      || !std::all_of(share.x.begin(), share.x.end(),
                      [](float v) { return std::isfinite(v); }))
    throw std::invalid_argument("push-sum share with a non-finite value or "
                                "a weight that is not positive");
  for (std::size_t i = 0; i < s.x.size(); ++i)
    s.x[i] += share.x[i];
  s.w += share.w;
}

void push_sum_debias(const push_sum_state& s, float* z) {
  auto inv = 1.0 / s.w;
  for (std::size_t i = 0; i < s.x.size(); ++i)
    z[i] = static_cast<float>(s.x[i] * inv);
}

namespace {

/// The digit schedule's q for n = m^q (throws unless m >= 2 and n is a
/// power of m, naming `what`).
std::uint32_t digits_of(const char* what, std::uint32_t n, std::uint32_t m) {
  if (m < 2)
    throw std::invalid_argument(std::string{what} + ": groups of at least 2");
  std::uint32_t q = 0;
  std::uint64_t p = 1;
  while (p < n) {
    p *= m;
    ++q;
  }
  if (p != n || q == 0)
    throw std::invalid_argument(std::string{what} + ": " + std::to_string(n)
                                + " ranks is not a power of "
                                + std::to_string(m));
  return q;
}

} // namespace

std::vector<std::uint32_t> digit_group_members(std::uint32_t rank,
                                               std::uint32_t n, std::uint32_t m,
                                               std::uint64_t k) {
  auto q = digits_of("digit_group_members", n, m);
  if (rank >= n)
    throw std::invalid_argument("digit_group_members: rank "
                                + std::to_string(rank) + " of "
                                + std::to_string(n));
  std::uint64_t place = 1;
  for (std::uint64_t i = 0; i < k % q; ++i)
    place *= m;
  auto base = rank - (rank / place) % m * place; // that digit set to 0
  std::vector<std::uint32_t> out;
  for (std::uint64_t d = 0; d < m; ++d)
    out.push_back(static_cast<std::uint32_t>(base + d * place));
  return out;
}

std::vector<std::uint32_t> digit_neighbours(std::uint32_t rank, std::uint32_t n,
                                            std::uint32_t m) {
  auto q = digits_of("digit_neighbours", n, m);
  std::vector<std::uint32_t> out;
  for (std::uint32_t d = 0; d < q; ++d)
    for (auto r : digit_group_members(rank, n, m, d))
      if (r != rank)
        out.push_back(r);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::uint32_t> digit_groups(std::uint32_t n, std::uint32_t m,
                                        std::uint64_t k) {
  auto q = digits_of("digit_groups", n, m);
  // Digit d = k mod q varies within a group; the group id is the rank with
  // that digit removed.
  std::uint64_t d = k % q, place = 1;
  for (std::uint64_t i = 0; i < d; ++i)
    place *= m;
  std::vector<std::uint32_t> out(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    auto low = r % place, high = r / (place * m);
    out[r] = static_cast<std::uint32_t>(high * place + low);
  }
  return out;
}

namespace {

/// SplitMix64's finalizer: the Feistel rounds' mixing function.
std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The Feistel network's half width in bits for a domain of n values.
unsigned half_bits(std::uint32_t n) noexcept {
  unsigned bits = 2;
  while (bits < 32 && (std::uint64_t{1} << bits) < n)
    bits += 2;
  return bits / 2;
}

constexpr int feistel_rounds = 8;

std::uint64_t feistel_key(std::uint64_t seed, std::uint64_t k) noexcept {
  return mix64(seed * 0x9E3779B97F4A7C15ull + mix64(k + 0x632BE59BD9B4E019ull));
}

std::uint64_t round_function(std::uint64_t key, int round, std::uint64_t half,
                             std::uint64_t mask) noexcept {
  return mix64(key ^ (static_cast<std::uint64_t>(round) << 56) ^ half) & mask;
}

/// One pass of the network over [0, 4^h) (forward or back).
std::uint64_t feistel(std::uint64_t x, unsigned h, std::uint64_t key,
                      bool forward) noexcept {
  std::uint64_t mask = (std::uint64_t{1} << h) - 1;
  std::uint64_t left = x >> h, right = x & mask;
  if (forward) {
    for (int r = 0; r < feistel_rounds; ++r) {
      auto next = left ^ round_function(key, r, right, mask);
      left = right;
      right = next;
    }
  } else {
    for (int r = feistel_rounds - 1; r >= 0; --r) {
      auto prev = right ^ round_function(key, r, left, mask);
      right = left;
      left = prev;
    }
  }
  return (left << h) | right;
}

/// Cycle-walks the network until the value is in [0, n): a permutation
/// of [0, n) (the walk back inverts the walk forward).
std::uint32_t walk(std::uint32_t x, std::uint32_t n, std::uint64_t k,
                   std::uint64_t seed, bool forward, const char* who) {
  if (x >= n)
    throw std::invalid_argument(std::string{who} + ": " + std::to_string(x)
                                + " is not below " + std::to_string(n));
  auto h = half_bits(n);
  auto key = feistel_key(seed, k);
  std::uint64_t y = x;
  do
    y = feistel(y, h, key, forward);
  while (y >= n);
  return static_cast<std::uint32_t>(y);
}

} // namespace

std::uint32_t shuffle_place(std::uint32_t rank, std::uint32_t n,
                            std::uint64_t k, std::uint64_t seed) {
  return walk(rank, n, k, seed, true, "shuffle_place");
}

std::uint32_t shuffle_rank(std::uint32_t place, std::uint32_t n,
                           std::uint64_t k, std::uint64_t seed) {
  return walk(place, n, k, seed, false, "shuffle_rank");
}

std::vector<std::uint32_t> random_groups(std::uint32_t n, std::uint32_t m,
                                         std::uint64_t k, std::uint64_t seed) {
  if (m < 1)
    throw std::invalid_argument("random_groups: groups of at least 1");
  std::vector<std::uint32_t> out(n);
  for (std::uint32_t r = 0; r < n; ++r)
    out[r] = shuffle_place(r, n, k, seed) / m;
  return out;
}

std::vector<std::uint32_t>
random_group_members(std::uint32_t rank, std::uint32_t n, std::uint32_t m,
                     std::uint64_t k, std::uint64_t seed) {
  if (m < 1)
    throw std::invalid_argument("random_group_members: groups of at least 1");
  auto first = shuffle_place(rank, n, k, seed) / m * std::uint64_t{m};
  std::vector<std::uint32_t> out;
  for (auto p = first; p < first + m && p < n; ++p)
    out.push_back(shuffle_rank(static_cast<std::uint32_t>(p), n, k, seed));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::vector<std::uint32_t>>
group_members(const std::vector<std::uint32_t>& group_of) {
  std::uint32_t groups = 0;
  for (auto g : group_of)
    groups = std::max(groups, g + 1);
  std::vector<std::vector<std::uint32_t>> out(groups);
  for (std::uint32_t r = 0; r < group_of.size(); ++r)
    out[group_of[r]].push_back(r);
  return out;
}

void average_groups(std::vector<std::vector<float>>& xs,
                    const std::vector<std::uint32_t>& group_of) {
  if (xs.empty())
    return;
  auto n = xs.front().size();
  std::vector<double> sum(n);
  for (const auto& members : group_members(group_of)) {
    if (members.empty())
      continue;
    std::fill(sum.begin(), sum.end(), 0.0);
    for (auto r : members)
      for (std::size_t i = 0; i < n; ++i)
        sum[i] += xs[r][i];
    for (auto r : members)
      for (std::size_t i = 0; i < n; ++i)
        xs[r][i] = static_cast<float>(sum[i] / members.size());
  }
}

} // namespace troupe::optim
