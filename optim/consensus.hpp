#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <vector>

// The vector steps of the consensus algorithms, without actors
// (algorithms.md §3 EASGD and §4 LSGD, DiLoCo): the elastic difference, the
// pull toward a leader, the leader election and the leader score, the
// pseudo-gradient of a round of local steps.

namespace troupe::optim {

class state_writer;
class state_reader;

/// EASGD's elastic difference e = alpha * (x - center) (n values); the
/// worker then moves x <- x - e and the center center <- center + e, so
/// x + center is unchanged (algorithms.md §3, the code order).
void elastic_difference(const float* x, const float* center, double alpha,
                        float* e, std::size_t n) noexcept;

/// DiLoCo's pseudo-gradient of a round: delta = start - x (n values), what
/// the round's local steps moved the replica from the global parameters it
/// started at. An outer optimizer applies the workers' mean delta to the
/// global parameters as a gradient; outer SGD at rate 1 makes them the
/// mean of the workers' models (federated averaging).
void pseudo_gradient(const float* start, const float* x, float* delta,
                     std::size_t n) noexcept;

/// Parle's scoped coupling after `rounds` rounds: c (1 + s / per_epoch)^
/// rounds, at most `cap` (it grows by about e^s an epoch of `per_epoch`
/// rounds).
double parle_scope(double c, double s, double cap, double rounds,
                   double per_epoch) noexcept;

/// Parle's inner (Entropy-SGD) gradient at y: g += gamma (y - anchor), the
/// pull back toward the replica's anchor (n values).
void parle_inner_gradient(float* g, const float* y, const float* anchor,
                          double gamma, std::size_t n) noexcept;

/// The running mean of the inner iterates: z <- alpha z + (1 - alpha) y.
void running_average(float* z, const float* y, double alpha,
                     std::size_t n) noexcept;

/// Parle's anchor gradient: g = (anchor - z) + rho (anchor - reference),
/// the local entropy's gradient plus the elastic force toward the
/// replicas' mean.
void parle_outer_gradient(const float* anchor, const float* z,
                          const float* reference, double rho, float* g,
                          std::size_t n) noexcept;

/// LSGD's pull x <- x - lambda * (x - leader) = (1 - lambda) x + lambda
/// leader (n values); returns ||x - leader|| before the pull, in double.
double pull_toward(float* x, const float* leader, double lambda,
                   std::size_t n) noexcept;

/// Euclidean distance ||x - y|| in double.
double distance(const float* x, const float* y, std::size_t n) noexcept;

/// One candidate of a leader election.
struct leader_score {
  std::uint32_t rank = 0; ///< the worker's id
  /// Running mean of its recent training losses (lower is better). NaN or
  /// no losses yet: never preferred over a finite score.
  double score = std::numeric_limits<double>::quiet_NaN();
};

/// The leader: the candidate with the lowest finite score, ties to the
/// lowest rank; the order of `candidates` does not matter. If no score is
/// finite, the lowest rank. Returns the index into `candidates`, or
/// candidates.size() if it is empty.
std::size_t elect(const std::vector<leader_score>& candidates) noexcept;

/// The running mean of the last `window` training losses (LSGD's leader
/// score; the code's --avg_size, default tau). Non-finite losses are
/// ignored.
class loss_window {
public:
  explicit loss_window(std::size_t window = 10);

  void add(double loss);

  /// The mean of the kept losses; NaN if there are none.
  double mean() const noexcept;

  std::size_t size() const noexcept {
    return losses_.size();
  }

  /// The kept losses (a checkpoint's), names prefixed with `prefix`.
  void save(state_writer& w, const std::string& prefix) const;

  /// Reads what save() wrote; throws data_error naming the tensor.
  void load(const state_reader& r, const std::string& prefix);

private:
  std::size_t window_;
  std::deque<double> losses_;
  double sum_ = 0;
  std::uint64_t adds_ = 0;
};

/// Settings of EASGD / EAMSGD (algorithms.md §3).
struct easgd_options {
  /// Local steps between elastic exchanges.
  std::uint64_t tau = 4;
  /// Moving rate alpha = eta * rho; <= 0: beta / p with beta = 0.9 (the
  /// paper's choice for p workers).
  double alpha = 0;
  /// EAMSGD's Nesterov momentum delta (0: plain EASGD; the paper: 0.99).
  double momentum = 0;
  /// Worker learning rate eta.
  double lr = 0.01;
};

/// Settings of asynchronous multi-leader LSGD (algorithms.md §4; defaults
/// from the authors' scripts: c1 = c2 = 0.1, l_comm = g_comm / 4,
/// avg_size = l_comm, momentum 0.9, weight decay 1e-4).
struct lsgd_options {
  std::uint32_t groups = 1;
  double lambda = 0.1;          ///< local pull strength (c1)
  double lambda_g = 0.1;        ///< global pull strength (c2)
  std::uint64_t tau = 4;        ///< local period (l_comm), steps per worker
  std::uint64_t tau_g = 16;     ///< global period (g_comm), steps per worker
  std::size_t score_window = 4; ///< A: losses in the leader score (avg_size)
};

} // namespace troupe::optim
