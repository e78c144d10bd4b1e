#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

// The vector steps and schedules of the decentralized algorithms, without
// actors (algorithms.md §5 SGP and §7 DS-Sync): push-sum's split, mix and
// de-biasing, the time-varying directed exponential graph, and DS-Sync's
// group partitions. Every schedule is a pure function of its arguments, so
// all peers agree on it without messages.

namespace troupe::optim {

// -- push-sum (SGP) -----------------------------------------------------------

/// The out-peers of `rank` at iteration k on the time-varying directed
/// exponential graph of n nodes: offsets 2^0, 2^1, ..., 2^floor(log2(n-1)),
/// `peers` consecutive ones per iteration, cycling (peers = 1: node i sends
/// to (i + 2^(k mod L)) mod n). With peers = 1 every node has exactly one
/// in-peer per iteration. Empty for n < 2; at most L distinct peers.
std::vector<std::uint32_t> exponential_out_peers(std::uint32_t rank,
                                                 std::uint64_t k,
                                                 std::uint32_t n,
                                                 std::uint32_t peers);

/// The in-peers of `rank` at iteration k on the same graph.
std::vector<std::uint32_t> exponential_in_peers(std::uint32_t rank,
                                                std::uint64_t k,
                                                std::uint32_t n,
                                                std::uint32_t peers);

/// Every rank `rank` ever exchanges with on that graph (any iteration, any
/// `peers`): rank +- 2^i mod n over the offsets, in increasing order,
/// `rank` itself left out. At most 2 floor(log2(n - 1)) + 2 ranks; the
/// relation is symmetric.
std::vector<std::uint32_t> exponential_neighbours(std::uint32_t rank,
                                                  std::uint32_t n);

/// A node's push-sum state: numerator x and weight w (z = x / w).
struct push_sum_state {
  std::vector<float> x;
  double w = 1;
};

/// What a node sends to one out-peer: its share of x and of w.
struct push_sum_share {
  std::vector<float> x;
  double w = 0;
};

/// Splits uniformly among the node and `out_degree` peers (p = 1 /
/// (out_degree + 1)): the node keeps p x and p w, and the returned share
/// (the same p x, p w) goes to each out-peer. Mass is conserved: what is
/// kept plus out_degree shares equals what was there.
push_sum_share push_sum_split(push_sum_state& s, std::size_t out_degree);

/// Adds a received share (x += share.x, w += share.w). Throws
/// std::invalid_argument if the sizes differ or the share is not finite.
void push_sum_mix(push_sum_state& s, const push_sum_share& share);

/// The de-biased parameters z = x / w (where gradients are evaluated and
/// the model is read).
void push_sum_debias(const push_sum_state& s, float* z);

// -- DS-Sync groups -----------------------------------------------------------

/// DS-Sync's digit schedule: n = m^q ranks written in base m; at iteration k
/// the ranks that agree on every digit except digit (k mod q) form a group
/// (size m). Returns each rank's group id in [0, n / m). q rounds without
/// gradient steps give the exact global average. Throws
/// std::invalid_argument unless m >= 2 and n is a power of m.
std::vector<std::uint32_t> digit_groups(std::uint32_t n, std::uint32_t m,
                                        std::uint64_t k);

/// The members of `rank`'s group at iteration k on the digit schedule
/// (digit_groups), in increasing order, `rank` included: O(m), not O(n).
/// Throws std::invalid_argument as digit_groups does.
std::vector<std::uint32_t> digit_group_members(std::uint32_t rank,
                                               std::uint32_t n, std::uint32_t m,
                                               std::uint64_t k);

/// Every rank that shares a group with `rank` at some iteration of the
/// digit schedule (ranks differing from it in exactly one base-m digit),
/// in increasing order, `rank` left out: q (m - 1) ranks for n = m^q.
std::vector<std::uint32_t> digit_neighbours(std::uint32_t rank, std::uint32_t n,
                                            std::uint32_t m);

/// A pseudo-random permutation of [0, n) keyed by (seed, k): an eight-round
/// Feistel network on the smallest even number of bits covering n, walked
/// until the value falls in [0, n). O(1) expected per rank, in both
/// directions, with no table: a rank's place in round k's shuffle.
std::uint32_t shuffle_place(std::uint32_t rank, std::uint32_t n,
                            std::uint64_t k, std::uint64_t seed);

/// The rank at place `place` of shuffle_place's permutation (its inverse).
std::uint32_t shuffle_rank(std::uint32_t place, std::uint32_t n,
                           std::uint64_t k, std::uint64_t seed);

/// A random partition of n ranks into groups of m (the last one smaller if
/// m does not divide n), from (seed, k) alone: the places of shuffle_place
/// cut into runs of m. Returns each rank's group id (O(n)).
std::vector<std::uint32_t> random_groups(std::uint32_t n, std::uint32_t m,
                                         std::uint64_t k, std::uint64_t seed);

/// The members of `rank`'s group in random_groups(n, m, k, seed), in
/// increasing order, `rank` included: O(m), not O(n).
std::vector<std::uint32_t>
random_group_members(std::uint32_t rank, std::uint32_t n, std::uint32_t m,
                     std::uint64_t k, std::uint64_t seed);

/// The members of each group, ranks in increasing order, from a group id
/// per rank.
std::vector<std::vector<std::uint32_t>>
group_members(const std::vector<std::uint32_t>& group_of);

/// Replaces every member's vector by the group's mean (DS-Sync's group
/// all-reduce), computed in double. All vectors have the same size.
void average_groups(std::vector<std::vector<float>>& xs,
                    const std::vector<std::uint32_t>& group_of);

} // namespace troupe::optim
