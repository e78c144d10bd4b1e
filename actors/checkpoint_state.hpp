// The state of the shared roles in a checkpoint (issue [11]): a shard's and
// a worker's whole state as one state file each (optim/state_file.hpp), and
// back. The roles' own handlers call these; the coordinator collects the
// bytes (coordinator_checkpoint.cpp).

#pragma once

#include <string>

namespace troupe::actors {

struct parameter_shard_state;
class worker_state;

/// The shard's store (parameters, server optimizer, version, staleness,
/// de-duplication table), its clocks, its pending synchronous rounds and
/// its counters.
std::string save_shard(const parameter_shard_state& st);

/// Loads save_shard's bytes into a shard built from the same job; throws
/// optim::data_error naming `file` and the tensor that does not fit.
void load_shard(parameter_shard_state& st, const std::string& bytes,
                const std::string& file);

/// The worker's replica (parameters, data position), its policy's state
/// (comm_policy::save) and its counters. Between two steps only.
std::string save_worker(const worker_state& st);

/// Loads save_worker's bytes into a worker built from the same job; throws
/// optim::data_error naming `file` and the tensor that does not fit, or
/// std::logic_error if the policy cannot be restored.
void load_worker(worker_state& st, const std::string& bytes,
                 const std::string& file);

} // namespace troupe::actors
