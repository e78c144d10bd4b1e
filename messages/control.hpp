#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/none.hpp>

#include "messages/messages.hpp"

// Job-control messages between workers, shards, the evaluator and the
// coordinator: progress, statistics, evaluations. Metadata only; no tensors.

namespace troupe::messages {

// -- real ---------------------------------------------------------------------

/// A double that crosses the wire as its IEEE-754 bit pattern: CAF 0.17's
/// float encoder turns NaN into 1.0 and loops forever on +inf.
struct real {
  double value = 0;
};

/// Serializes the bit pattern as a uint64.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, real& x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x.value, sizeof bits);
  return f(caf::meta::type_name("real"), bits,
           caf::meta::load_callback([&]() -> caf::error {
             std::memcpy(&x.value, &bits, sizeof bits);
             return caf::none;
           }));
}

/// A double field of another message that crosses the wire as its bit
/// pattern, like real: `f(..., as_bits(x.weight), ...)` in an inspect().
struct real_bits {
  double* value;
};

/// Refers to `x` for an inspector.
inline real_bits as_bits(double& x) noexcept {
  return real_bits{&x};
}

/// Serializes the bit pattern as a uint64.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, real_bits& x) {
  std::uint64_t bits;
  std::memcpy(&bits, x.value, sizeof bits);
  return f(caf::meta::type_name("real"), bits,
           caf::meta::load_callback([&]() -> caf::error {
             std::memcpy(x.value, &bits, sizeof bits);
             return caf::none;
           }));
}

// -- progress_msg -------------------------------------------------------------

/// A worker's report after each step.
struct progress_msg {
  worker_id worker = 0;
  std::uint64_t steps = 0;   ///< steps completed
  std::uint64_t samples = 0; ///< examples of this step
  real loss;                 ///< minibatch loss of this step
};

/// Serializes or prints a progress_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, progress_msg& x) {
  return f(caf::meta::type_name("progress_msg"), x.worker, x.steps, x.samples,
           x.loss);
}

// -- worker_stats -------------------------------------------------------------

/// What a worker did, sent when it finishes or is stopped.
struct worker_stats {
  worker_id worker = 0;
  std::uint64_t steps = 0;
  std::uint64_t samples = 0;
  std::uint64_t messages = 0;   ///< messages sent (pushes, fetch requests)
  std::uint64_t bytes = 0;      ///< bytes of those messages as serialized
  std::uint64_t compute_ns = 0; ///< time in gradient computation
  std::uint64_t wait_ns = 0;    ///< time waiting for shards
  std::string error;            ///< empty, or why the worker stopped early
  std::uint64_t pulls = 0;      ///< LSGD: pulls toward a leader applied
  real pull_distance;           ///< LSGD: sum of ||x - x_leader|| at pulls
  /// SGP: shares mixed in; DS-Sync: group averages; ShadowSync: corrections
  /// applied.
  std::uint64_t mixes = 0;
  /// SGP / DS-Sync: waits for a peer that ended at the request timeout.
  std::uint64_t timeouts = 0;
  real weight; ///< SGP: the push-sum weight w when reported
  /// Compressed pushes: bytes before (4 per coordinate) and after
  /// compression, for fully connected and convolutional layers.
  std::uint64_t dense_fc = 0, packed_fc = 0, dense_conv = 0, packed_conv = 0;
  real residual_norm; ///< the compressors' residual (error feedback) norm
  /// Parameter-server workers: pushes sent (each to every shard).
  std::uint64_t pushes = 0;
  /// Robust mixing (SGP, DS-Sync with --aggregation): neighbours' models
  /// clipped (cclip), and left out (a rule's selection, a share refused:
  /// not an in-peer of its iteration, or an iteration already heard).
  std::uint64_t mix_clipped = 0, mix_discarded = 0;
};

/// Serializes or prints a worker_stats.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_stats& x) {
  return f(caf::meta::type_name("worker_stats"), x.worker, x.steps, x.samples,
           x.messages, x.bytes, x.compute_ns, x.wait_ns, x.error, x.pulls,
           x.pull_distance, x.mixes, x.timeouts, x.weight, x.dense_fc,
           x.packed_fc, x.dense_conv, x.packed_conv, x.residual_norm, x.pushes,
           x.mix_clipped, x.mix_discarded);
}

// -- shard_stats --------------------------------------------------------------

/// One worker's pushes as a shard saw them.
struct worker_pushes {
  worker_id worker = 0;
  std::uint64_t applied = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t non_finite = 0; ///< rejected: NaN or infinite values
  std::uint64_t bad_range = 0;  ///< rejected: wrong range, size or version
  /// Sync rounds whose aggregation rule left this worker's push out
  /// (optim/robust.hpp: a selection rule, or a non-finite value).
  std::uint64_t discarded = 0;
};

/// Serializes or prints a worker_pushes.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_pushes& x) {
  return f(caf::meta::type_name("worker_pushes"), x.worker, x.applied,
           x.duplicates, x.non_finite, x.bad_range, x.discarded);
}

/// A shard's statistics.
struct shard_stats {
  std::uint32_t shard = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t version = 0;
  /// staleness_histogram[s]: applied pushes with staleness s (last bucket:
  /// s and above).
  std::vector<std::uint64_t> staleness_histogram;
  std::uint64_t staleness_sum = 0;
  std::uint64_t staleness_max = 0;
  /// Largest clock - min clock of any granted fetch (SSP invariant: <= s).
  std::uint64_t max_clock_gap = 0;
  std::uint64_t messages = 0; ///< replies sent
  std::uint64_t bytes = 0;    ///< bytes of those replies as serialized
  std::vector<worker_pushes> workers;
  /// FNV-1a of the shard's parameters' bytes (a primary and its hot backup
  /// hold the same).
  std::string params_hash;
  /// A primary with a hot backup: the backup's version and parameter hash
  /// once it handled every push forwarded before these statistics were
  /// taken (empty hash: no backup answered).
  std::uint64_t backup_version = 0;
  std::string backup_hash;
};

/// Serializes or prints a shard_stats.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shard_stats& x) {
  return f(caf::meta::type_name("shard_stats"), x.shard, x.offset, x.size,
           x.version, x.staleness_histogram, x.staleness_sum, x.staleness_max,
           x.max_clock_gap, x.messages, x.bytes, x.workers, x.params_hash,
           x.backup_version, x.backup_hash);
}

// -- eval_msg -----------------------------------------------------------------

/// An evaluation of the shards' current parameters on the test set.
struct eval_msg {
  real loss;
  real accuracy;
  std::uint64_t samples = 0;
  std::uint64_t version = 0; ///< sum of the shard versions evaluated
  std::string param_hash;    ///< FNV-1a of the evaluated parameters' bytes
};

/// Serializes or prints an eval_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eval_msg& x) {
  return f(caf::meta::type_name("eval_msg"), x.loss, x.accuracy, x.samples,
           x.version, x.param_hash);
}

// -- peer_list_msg ------------------------------------------------------------

/// Every worker's handle by rank (a null handle: gone before the start),
/// for algorithms whose workers may exchange with any other (DS-Sync's
/// random groups: actors::algorithm::any_peer). The workers of one process
/// share one table: a message sent to many local actors carries the
/// pointer, and only one that crosses processes is read into a table of its
/// own.
struct handle_table {
  std::shared_ptr<const std::vector<caf::actor>> handles;
  std::size_t size() const noexcept {
    return handles ? handles->size() : 0;
  }
  const caf::actor& operator[](std::size_t i) const {
    return (*handles)[i];
  }
  /// The most handles a table read from the wire may hold.
  static constexpr std::uint64_t max_size = std::uint64_t{1} << 22;
};

/// Writes the count (uint64), then the handles.
caf::error inspect(caf::serializer& f, handle_table& x);

/// Reads what the serializer overload wrote; a count above max_size is
/// refused before anything is read.
caf::error inspect(caf::deserializer& f, handle_table& x);

/// "N handles".
std::string to_string(const handle_table& x);

/// The coordinator's word to a peer-to-peer worker before its start: the
/// handles of the ranks it exchanges with (actors::algorithm::peer_ranks),
/// ranks in increasing order, one handle each (a null handle: a rank gone
/// before the start). Only the neighbours: a worker's state does not grow
/// with the job. Or, for an algorithm whose workers may exchange with any
/// other, no ranks and every worker's handle in `all` (one table shared).
struct peer_list_msg {
  std::vector<worker_id> ranks;
  std::vector<caf::actor> handles;
  handle_table all;
};

/// Serializes or prints a peer_list_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_list_msg& x) {
  return f(caf::meta::type_name("peer_list_msg"), x.ranks, x.handles, x.all);
}

/// Returns one-line descriptions for logs.
std::string to_string(const real& x);
std::string to_string(const peer_list_msg& x);
std::string to_string(const worker_pushes& x);
std::string to_string(const progress_msg& x);
std::string to_string(const worker_stats& x);
std::string to_string(const shard_stats& x);
std::string to_string(const eval_msg& x);

/// Serialized size in bytes of a message with these fields (what it costs on
/// the wire, payload included), for the messages and bytes counters.
std::uint64_t wire_size(const push_msg& x);
std::uint64_t wire_size(const fetch_msg& x);
std::uint64_t wire_size(const params_msg& x);

} // namespace troupe::messages
