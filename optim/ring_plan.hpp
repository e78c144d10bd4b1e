#pragma once

#include <cstddef>
#include <vector>

#include "optim/range_table.hpp"

namespace troupe::optim {

/// One rank's part of one step of a ring all-reduce: send a chunk to the
/// right neighbour, receive a chunk from the left one and either add it to
/// the local chunk (reduce-scatter) or overwrite the local chunk with it
/// (all-gather).
struct ring_transfer {
  std::size_t send_chunk = 0;
  std::size_t recv_chunk = 0;
  bool reduce = true; ///< add (reduce-scatter) or copy (all-gather)
};

/// The schedule of a ring all-reduce of an N-element vector over n ranks
/// (Patarasuk and Yuan; algorithms.md §12): the vector is cut into n chunks
/// whose sizes differ by at most one; n - 1 reduce-scatter steps leave rank r
/// with the complete sum of chunk (r + 1) mod n, then n - 1 all-gather steps
/// circulate the complete chunks. Each rank sends about 2 (n - 1) / n N
/// elements, the bandwidth optimum. Pure arithmetic: actors (or threads, or
/// the in-memory executor below) carry out the transfers.
class ring_plan {
public:
  /// Throws std::invalid_argument if ranks == 0 or length < ranks.
  ring_plan(std::size_t ranks, std::size_t length);

  std::size_t ranks() const noexcept {
    return ranks_;
  }

  std::size_t length() const noexcept {
    return length_;
  }

  /// 2 (n - 1) steps.
  std::size_t steps() const noexcept {
    return 2 * (ranks_ - 1);
  }

  /// The element range of chunk `c`.
  slice chunk(std::size_t c) const noexcept {
    return chunks_[c];
  }

  /// Rank `rank`'s transfer in step `step` (0-based, < steps()).
  ring_transfer at(std::size_t rank, std::size_t step) const noexcept;

  /// The rank to send to and the rank to receive from.
  std::size_t right(std::size_t rank) const noexcept {
    return (rank + 1) % ranks_;
  }
  std::size_t left(std::size_t rank) const noexcept {
    return (rank + ranks_ - 1) % ranks_;
  }

  /// Elements rank `rank` sends over the whole all-reduce.
  std::size_t elements_sent(std::size_t rank) const noexcept;

private:
  std::size_t ranks_;
  std::size_t length_;
  std::vector<slice> chunks_;
};

/// Carries out `plan` over `buffers` (one per rank, plan.length() elements
/// each) in memory, step by step as the ranks would: afterwards every buffer
/// holds the element-wise sum, and all buffers are bitwise equal. The
/// reference the message-passing versions are tested against.
template <class T>
void ring_allreduce(const ring_plan& plan, const std::vector<T*>& buffers);

} // namespace troupe::optim
