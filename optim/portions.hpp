#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

// Sandblaster's load balancing (algorithms.md §2) as a pure table the
// coordinator keeps per batch: the batch is cut into many more portions
// than workers; an idle worker takes the next unassigned portion (the one
// after its last, for data affinity); once none is left, idle workers get
// backup copies of outstanding portions; the first result per portion
// counts, later ones are discarded; a lost worker's outstanding portions go
// back to the pool. No CAF.

namespace troupe::optim {

class portion_table {
public:
  /// Throws std::invalid_argument for zero portions. Without `backups` an
  /// idle worker gets nothing once the pool is empty (to measure what
  /// backup copies gain).
  explicit portion_table(std::size_t portions, bool backups = true);

  /// The next portion for `worker`, or nullopt if every portion is done or
  /// all outstanding ones are already being computed by this worker.
  std::optional<std::size_t> assign(std::uint32_t worker);

  /// Worker's result for portion p: true if it is the first (it counts),
  /// false if the portion was already done (a backup's late twin) or p is
  /// out of range.
  bool complete(std::size_t p, std::uint32_t worker);

  /// The worker is gone: its outstanding portions that nobody else holds
  /// go back to the pool. Returns how many.
  std::size_t lose(std::uint32_t worker);

  bool done() const noexcept {
    return completed_ == state_.size();
  }
  std::size_t size() const noexcept {
    return state_.size();
  }
  std::size_t completed() const noexcept {
    return completed_;
  }
  std::size_t duplicates() const noexcept {
    return duplicates_; ///< results discarded
  }
  std::size_t backups() const noexcept {
    return backups_; ///< backup copies handed out
  }
  std::size_t reissued() const noexcept {
    return reissued_; ///< portions returned by lose()
  }
  /// Who produced portion p's counted result (nullopt while not done).
  std::optional<std::uint32_t> winner(std::size_t p) const;

private:
  struct entry {
    bool done = false;
    std::vector<std::uint32_t> holders; ///< workers computing it now
    std::optional<std::uint32_t> winner;
  };
  std::vector<entry> state_;
  std::vector<std::size_t> pool_;                ///< unassigned, ascending
  std::vector<std::optional<std::size_t>> last_; ///< per worker
  bool backup_copies_ = true;
  std::size_t completed_ = 0, duplicates_ = 0, backups_ = 0, reissued_ = 0;
};

} // namespace troupe::optim
