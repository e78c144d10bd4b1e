// What all-reduce SGD's ring sums each step (--reducer): the dense gradient,
// PowerSGD's low-rank factors, ScaleCom's values at a shared top-k index set
// (docs/algorithms.md "PowerSGD and ScaleCom") or the dense layers'
// sufficient factors (sfb_reducer.hpp). Each is a sequence of
// exchanges of summable vectors, the same length on every worker; the ring
// (allreduce_policy.cpp) sums each, the reducer turns the sum into the next
// exchange's vector or the step's mean gradient. No actors here.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optim/range_table.hpp"
#include "optim/sufficient_factors.hpp"

namespace troupe::optim {
class state_writer;
class state_reader;
} // namespace troupe::optim

namespace troupe::algos {

/// --reducer and its settings.
struct reducer_options {
  std::string kind = "dense"; ///< dense | powersgd | scalecom
  /// PowerSGD's rank.
  std::size_t rank = 4;
  /// ScaleCom's share of the entries sent each step.
  double density = 0.01;
  /// ScaleCom's low-pass filter on the memory, in (0, 1]; 1: plain error
  /// feedback.
  double beta = 1;
  /// PowerSGD's starting Q (the same on every worker).
  std::uint64_t seed = 1;
  /// The model's layers (PowerSGD's matrices).
  std::vector<optim::named_range> layers;
  /// SFB: auto (Poseidon's choice per layer) or all (every dense layer).
  std::string sfb_layers = "auto";
  /// SFB: the model's dense layers and the largest batch a worker draws.
  std::vector<optim::fc_layer> fc;
  std::size_t batch = 0;
};

/// Throws std::invalid_argument naming the flag (--reducer, --rank,
/// --scalecom-density, --scalecom-beta) if a setting cannot apply.
void check_reducer(const reducer_options& o);

class reducer {
public:
  virtual ~reducer() = default;

  /// The exchanges of a step (1 or 2).
  virtual std::size_t exchanges() const noexcept = 0;

  /// The length of exchange e's vector.
  virtual std::size_t length(std::size_t e) const noexcept = 0;

  /// Exchange 0's vector `out` (length(0) values) from the worker's mean
  /// gradient g over `samples` examples of step `step` (samples 0: its
  /// gradient was not finite and adds nothing).
  virtual void begin(std::uint64_t step, const float* g, std::uint32_t samples,
                     float* out)
      = 0;

  /// Exchange e's sum over every worker (`total` examples) is `sum`: writes
  /// exchange e + 1's vector to `out` and returns true, or the step's mean
  /// gradient (the model's n values) to `mean` and returns false. Sets
  /// `problem` (and returns false) if the sum cannot be used.
  virtual bool next(std::size_t e, const float* sum, std::uint64_t total,
                    float* out, float* mean, std::string& problem)
      = 0;

  /// Whether begin() needs the step's pass (SFB's factors): then
  /// take_pass() comes first, with the model and batch of the gradient.
  virtual bool wants_pass() const noexcept {
    return false;
  }
  virtual void take_pass(const optim::sequential<float>& model,
                         const optim::matrix<float>& batch) {
    (void)model;
    (void)batch;
  }

  /// Its figures for the worker's report (bytes saved, ...).
  virtual double residual_norm() const noexcept {
    return 0;
  }

  /// What it keeps from one step to the next (error feedback's memory,
  /// PowerSGD's Q), in a checkpoint taken between two steps, as tensors
  /// named `prefix` + field; load() throws optim::data_error naming the
  /// tensor that is missing or does not fit. None by default.
  virtual void save(optim::state_writer& w, const std::string& prefix) const {
    (void)w;
    (void)prefix;
  }
  virtual void load(const optim::state_reader& r, const std::string& prefix) {
    (void)r;
    (void)prefix;
  }
};

/// The reducer of `o` for a model of n values, on worker `rank` of
/// `workers`.
std::unique_ptr<reducer> make_reducer(const reducer_options& o, std::size_t n,
                                      std::uint32_t workers,
                                      std::uint32_t rank);

/// The values each worker puts into a step's exchanges (before the ring's
/// 2 (W - 1) / W), for the report.
std::size_t reducer_values(const reducer_options& o, std::size_t n,
                           std::uint32_t workers);

} // namespace troupe::algos
