#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// Batch normalization (Ioffe and Szegedy 2015), as PyTorch's BatchNorm1d
/// and BatchNorm2d: each feature (an input of shape {n, 1, 1}, per-sample
/// columns) or each channel (a spatial input, planes layout, statistics
/// over batch, height and width) is normalized by the batch's mean and
/// biased variance in a training pass, or by the running statistics for
/// inference, then scaled and shifted by the parameters "<prefix>.weight"
/// (gamma, initialized to 1) and "<prefix>.bias" (beta, 0).
///
/// The running statistics are buffers, "<prefix>.running_mean" and
/// "<prefix>.running_var" (initially 0 and 1): a training pass moves them
/// toward the batch's statistics with momentum 0.1 (the variance unbiased,
/// n / (n - 1)); a calibration pass averages the batches' statistics since
/// the last reset with equal weights (PyTorch's momentum=None).
template <class T>
class batch_norm : public layer<T> {
public:
  /// Throws std::invalid_argument unless eps > 0 and 0 < momentum <= 1.
  explicit batch_norm(double eps = 1e-5, double momentum = 0.1);

  std::string kind() const override {
    return "batch_norm";
  }

  /// Per-sample columns for feature vectors, planes for spatial inputs.
  optim::layout input_layout() const noexcept override {
    return spatial_ ? optim::layout::planes : optim::layout::columns;
  }

  shape setup(const shape& in) override;

  void declare(range_table& table, const std::string& prefix) override;

  void bind(T* params, T* grads) override;

  void init(rng& gen) override;

  void declare_buffers(range_table& table, const std::string& prefix) override;

  void bind_buffers(T* buffers) override {
    running_ = buffers;
  }

  void reset_buffers() override;

  void set_pass(optim::pass p) override {
    pass_ = p;
  }

  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

  /// Features or channels normalized (valid after setup).
  int groups() const noexcept {
    return groups_;
  }

private:
  double eps_;
  double momentum_;
  bool spatial_ = false;
  int groups_ = 0;
  int per_sample_ = 1; ///< values per group and sample (h * w)
  T* w_ = nullptr;     ///< gamma, then beta
  T* dw_ = nullptr;
  T* running_ = nullptr; ///< mean, then variance
  optim::pass pass_ = optim::pass::inference;
  long calibrated_ = 0;      ///< batches in the calibration since the reset
  bool batch_stats_ = false; ///< whether the last forward used the batch's
  matrix<T> xhat_;           ///< normalized input, values x groups
  vector<T> inv_std_;        ///< per group, of the last forward
  matrix<T> gx_, gy_;        ///< scratch, values x groups
};

} // namespace troupe::optim
