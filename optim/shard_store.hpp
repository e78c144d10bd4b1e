#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "optim/optimizer.hpp"
#include "optim/range_table.hpp"
#include "optim/schedule.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

class state_writer;
class state_reader;

/// Settings of a shard's server-side update (Downpour, algorithms.md §1).
struct shard_store_options {
  optimizer_options optimizer; ///< name: sgd | adagrad | adam | ...
  double lr = 0.01;            ///< server learning rate (gamma for adagrad)
  /// If set, the rate of the update that makes version v + 1 is
  /// lr_schedule->lr(v) and `lr` is ignored.
  std::optional<schedule_options> lr_schedule;
  /// Staleness-aware rate (algorithms.md §11, Zhang et al. 2016): divide the
  /// rate of each push by max(staleness, 1).
  bool staleness_aware = false;
  /// Largest staleness with its own histogram bucket; larger values share
  /// the last bucket.
  std::size_t histogram_buckets = 64;
};

/// What became of one push.
enum class push_status {
  applied,    ///< the gradient was applied; the version advanced
  duplicate,  ///< (worker, seq) already seen: dropped
  bad_range,  ///< offset/size not this shard's, or a future version: rejected
  non_finite, ///< NaN or infinite values: rejected
};

/// Returns "applied", "duplicate", "bad_range" or "non_finite".
const char* to_string(push_status status) noexcept;

/// The outcome of a push.
struct push_result {
  push_status status = push_status::applied;
  std::uint64_t version = 0;   ///< the shard's version after the push
  std::uint64_t staleness = 0; ///< updates between fetch and apply (applied)
};

/// One push of a buffered round (shard_store::apply_round).
struct round_push {
  std::uint32_t worker = 0;
  std::uint64_t seq = 0;
  std::uint64_t base_version = 0;
};

/// Per-worker bookkeeping a shard keeps.
struct worker_record {
  std::uint64_t last_seq = 0; ///< highest applied sequence number (0: none)
  std::uint64_t applied = 0;
  std::uint64_t rejected = 0; ///< bad_range + non_finite
  std::uint64_t duplicates = 0;
};

/// The state of one parameter-server shard, without actors: a contiguous
/// slice of the flat parameter vector, the server-side optimizer that applies
/// pushed gradients to it (per coordinate, so AdaGrad is exact under any
/// sharding), a version counter advanced by every applied push, duplicate
/// detection by (worker, sequence number), rejection of malformed pushes with
/// the parameters untouched, and the staleness of every applied push.
///
/// Sequence numbers of one worker start at 1 and increase; CAF delivers the
/// messages of one sender in order, so a seq at or below the last applied one
/// is a duplicate (a retransmission).
template <class T>
class shard_store {
public:
  /// A shard owning `range` of the flat vector, starting from `init` (the
  /// values of the whole flat vector; only `range` is read).
  shard_store(slice range, const T* init, shard_store_options opts);

  /// Applies the gradient `grad` (n values for flat indices [offset,
  /// offset + n)) computed by `worker` on parameters of `base_version`.
  push_result push(std::uint32_t worker, std::uint64_t seq,
                   std::uint64_t base_version, std::size_t offset,
                   const T* grad, std::size_t n);

  /// The checks of push() without applying anything or touching the
  /// bookkeeping: `applied` means the push would be accepted.
  push_status check(std::uint32_t worker, std::uint64_t seq,
                    std::uint64_t base_version, std::size_t offset,
                    const T* grad, std::size_t n) const;

  /// Records a rejected or duplicate push of `worker` (after check()).
  void count(std::uint32_t worker, push_status status);

  /// Applies an already checked update of range().size values as one step
  /// (synchronous aggregation: the mean of all workers' pushes), records
  /// `seq` as the last one of each worker in `workers`, advances the version
  /// and returns it.
  std::uint64_t apply(const T* grad, std::uint64_t seq,
                      const std::vector<std::uint32_t>& workers);

  /// Applies a buffered round's combined update (asynchronous shards with
  /// a robust rule) as one step: records each push's sequence number as
  /// its worker's last one, advances the version and records the round's
  /// staleness, that of its oldest push (version - the least base version).
  /// Returns the new version.
  std::uint64_t apply_round(const T* grad, const std::vector<round_push>& in);

  /// Advances the version without changing the parameters (a synchronous
  /// step in which every push was rejected); returns the new version.
  std::uint64_t skip() noexcept {
    return ++version_;
  }

  /// Moves the version forward to `v` without changing the parameters (a
  /// synchronous shard restored into a running job catching up with the
  /// job's round); never back. Returns the new version.
  std::uint64_t skip_to(std::uint64_t v) noexcept {
    if (v > version_)
      version_ = v;
    return version_;
  }

  /// Learning rate of the next update at staleness 0.
  double current_lr() const;

  /// The shard's slice of the flat parameter vector.
  slice range() const noexcept {
    return range_;
  }

  /// Current parameters (range().size values).
  const T* params() const noexcept {
    return params_.data();
  }
  /// The values, for changes made outside the optimizer (another replica's
  /// updates: Gaia's servers, algos/gaia); the version does not move.
  T* mutable_params() noexcept {
    return params_.data();
  }

  /// Number of applied pushes so far.
  std::uint64_t version() const noexcept {
    return version_;
  }

  /// staleness_histogram()[s] = applied pushes with staleness s (the last
  /// bucket also counts everything larger).
  const std::vector<std::uint64_t>& staleness_histogram() const noexcept {
    return histogram_;
  }

  /// Mean and maximum staleness of the applied pushes (0 if none).
  double staleness_mean() const noexcept;
  std::uint64_t staleness_sum() const noexcept {
    return staleness_sum_;
  }
  std::uint64_t staleness_max() const noexcept {
    return staleness_max_;
  }

  /// Bookkeeping per worker id.
  const std::unordered_map<std::uint32_t, worker_record>&
  workers() const noexcept {
    return workers_;
  }

  /// Writes the parameters, the optimizer's state, the version, the
  /// staleness statistics and the per-worker records (the de-duplication
  /// table) as tensors named `prefix` + field, with the range and options.
  void save(state_writer& w, const std::string& prefix) const;

  /// Reads what save() wrote; throws data_error naming the file and the
  /// tensor or metadata key if it is missing or does not fit this shard
  /// (another range, option, optimizer or element type). Nothing changes
  /// then.
  void load(const state_reader& r, const std::string& prefix);

private:
  slice range_;
  shard_store_options opts_;
  flat_storage<T> params_;
  std::unique_ptr<optimizer<T>> opt_;
  std::optional<schedule> schedule_;
  std::uint64_t version_ = 0;
  std::vector<std::uint64_t> histogram_;
  std::uint64_t staleness_sum_ = 0;
  std::uint64_t staleness_max_ = 0;
  std::unordered_map<std::uint32_t, worker_record> workers_;
};

} // namespace troupe::optim
