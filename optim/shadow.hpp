#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

// ShadowSync's synchronization bodies (algorithms.md §6) as pure functions:
// the average of snapshots, BMUF's block update, and the delta a trainer
// adds (delta-apply keeps what it learned while the round ran). No CAF.

namespace troupe::optim {

/// ShadowSync's settings.
struct shadow_options {
  /// easgd (center on the shards), ma (model averaging) or bmuf.
  std::string mode = "ma";
  /// S-EASGD's moving rate; <= 0: 0.9 / workers.
  double alpha = 0;
  /// BMUF's block momentum eta_b (< 0: 1 - 1 / workers) and block rate zeta.
  double block_momentum = -1;
  double block_lr = 1;
  /// Pause between two rounds (0: back to back).
  std::chrono::milliseconds period{0};
};

/// BMUF state, replicated on every syncer: the global model w_g, the block
/// momentum D and the start point w_0 of the next block.
struct bmuf_state {
  std::vector<float> global, momentum, start;

  /// w_g = w_0 = init, D = 0.
  explicit bmuf_state(const std::vector<float>& init);
};

/// BMUF with Nesterov block momentum: G = a - w_0; D <- eta_b D + zeta G;
/// w_g <- w_g + D; w_0 <- w_g + eta_b D. `average` has the state's size
/// (throws std::invalid_argument otherwise).
void bmuf_update(bmuf_state& s, const std::vector<float>& average,
                 double block_momentum, double block_lr);

/// delta = target - snapshot: what a trainer adds to its parameters
/// (delta-apply) so that, had it not moved since the snapshot, it would hold
/// `target`.
void shadow_delta(const float* target, const float* snapshot, float* delta,
                  std::size_t n);

/// sum += x (in double, for an all-reduce summed in a fixed order).
void accumulate(std::vector<double>& sum, const float* x, std::size_t n);

} // namespace troupe::optim
