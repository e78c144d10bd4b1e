// A worker's replica on a sharded data directory (optim/data_dir.hpp): it
// owns the examples it trains on, its own files, loaded when it is built,
// and loads the part of a lost worker's examples it adopts.

#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/data_dir.hpp"
#include "optim/replica.hpp"

namespace troupe::optim {

/// What builds a data directory's replica.
struct data_dir_part {
  std::shared_ptr<const data_dir_summary> summary;
  std::size_t worker = 0;  ///< this replica's worker
  std::size_t workers = 1; ///< the job's workers (worker_files)
  bool standardize = false;
};

namespace detail {

/// What a data_dir_replica owns, built before its model_replica base reads
/// it: the worker's examples and the model.
struct data_dir_storage {
  std::shared_ptr<dataset> owned_data;
  std::unique_ptr<sequential<float>> owned_model;
};

} // namespace detail

/// A model_replica on worker `part.worker`'s files of the directory, which
/// owns its examples and model and adds the parts of lost workers it adopts.
class data_dir_replica : private detail::data_dir_storage,
                         public model_replica {
public:
  /// Loads the worker's files; the model is make_model<float>(model)
  /// initialised with `init_seed`, the minibatches drawn with `seed`.
  /// Throws data_error if the worker has no files or a file changed since
  /// the summary, std::invalid_argument as model_replica does.
  data_dir_replica(data_dir_part part, const std::string& model,
                   std::size_t batch_size, std::uint64_t seed,
                   std::uint64_t init_seed);

  /// Loads the k-th of m equal parts of worker `lost`'s examples (its files
  /// in order, as one sequence; only the files that hold the part are read)
  /// and adds them to this worker's; returns how many. Adopting the same
  /// part twice adds nothing.
  std::size_t adopt(std::size_t lost, std::uint32_t k, std::uint32_t m);

  /// Writes what model_replica writes, plus the parts adopted.
  void save_state(state_writer& w, const std::string& prefix) const override;

  /// Adopts the parts the state lists (the indices it holds refer to
  /// them), then reads the rest. Throws data_error if the state belongs to
  /// another worker or job size.
  void load_state(const state_reader& r, const std::string& prefix) override;

  /// The examples this replica holds.
  std::size_t examples() const noexcept {
    return owned_data->size();
  }

private:
  data_dir_part part_;
  std::vector<std::array<std::uint64_t, 3>> adopted_;
};

} // namespace troupe::optim
