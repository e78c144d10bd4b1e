// GADMM's chains and a worker's state between two steps (what a checkpoint
// keeps), apart from the policy (gadmm_policy.cpp).

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "algos/gadmm/gadmm_policy.hpp"
#include "messages/messages.hpp"

namespace troupe::optim {
class state_writer;
class state_reader;
} // namespace troupe::optim

namespace troupe::algos {

/// A worker's place on the chain of one iteration.
struct gadmm_chain_view {
  std::uint32_t pos = 0;
  std::optional<std::uint32_t> left, right;
  bool head() const noexcept {
    return pos % 2 == 0;
  }
};

/// The chains of a job: the ranks in order until the first change, then
/// optim::gadmm_chain's. A place and its neighbours are computed in O(1)
/// (a keyed shuffle, optim::gadmm_place): nothing grows with the job.
class gadmm_chains {
public:
  gadmm_chains(std::uint32_t workers, const gadmm_settings& g,
               std::uint64_t seed)
      : workers_(workers), rechain_(g.rechain), seed_(seed) {}

  /// Worker `rank`'s place on the chain used at iteration k.
  gadmm_chain_view view(std::uint64_t k, std::uint32_t rank) const;

  /// Its one or two neighbours there, increasing.
  std::vector<std::uint32_t> neighbours(std::uint64_t k,
                                        std::uint32_t rank) const;

private:
  std::uint32_t workers_;
  std::uint64_t rechain_, seed_;
};

/// A GADMM worker's state between two steps.
struct gadmm_state {
  explicit gadmm_state(std::size_t n);

  std::size_t n = 0;
  /// The duals of the worker's left and right edges (0 without the edge).
  std::vector<float> lam_l, lam_r;
  /// The neighbours' models of the current iteration.
  std::vector<float> nb_l, nb_r;
  /// The net dual (kept across a chain change's wait), scratch otherwise.
  std::vector<float> mu;
  /// Models received by round and sender, duals by round.
  std::map<std::uint64_t, std::map<messages::worker_id, messages::tensor>>
      inbox;
  std::map<std::uint64_t, messages::tensor> duals_in;
  /// The current iteration, how far its start went (3: done), and 1 + the
  /// last iteration whose start is done.
  std::uint64_t k = 0, phase = 0, prepared = 0;
  /// The neighbours' models taken this iteration; the edges in its
  /// augmented Lagrangian.
  bool had_l = false, had_r = false, edge_l = false, edge_r = false;
  bool mu_ready = false;
  /// Models that came after their iteration, and that never came.
  std::uint64_t late = 0, missed = 0;

  /// Names prefixed with `prefix`.
  void save(optim::state_writer& w, const std::string& prefix) const;
  /// Reads what save() wrote; throws optim::data_error naming the tensor
  /// that does not fit a model of n values.
  void load(const optim::state_reader& r, const std::string& prefix);
};

} // namespace troupe::algos
