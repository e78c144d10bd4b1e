#pragma once

// Finite-difference helpers shared by the gradient checks.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "tolerances.hpp"

namespace troupe::test {

/// Central finite-difference derivative of `f()` with respect to the scalar
/// `x` that f reads; restores `x`. Divides by the step actually taken.
template <class F>
double central_difference(F&& f, double& x) {
  const double saved = x;
  const double up_x = saved + fd_step;
  const double down_x = saved - fd_step;
  x = up_x;
  const double up = f();
  x = down_x;
  const double down = f();
  x = saved;
  return (up - down) / (up_x - down_x);
}

/// Collects analytic and numeric derivatives and judges them together: each
/// pair's error is relative to max(|analytic|, |numeric|, floor) with
/// floor = layer_grad_floor * (largest |analytic|).
class grad_comparison {
public:
  /// Records one coordinate under a label (e.g. "weight[12]").
  void add(std::string label, double analytic, double numeric) {
    labels_.push_back(std::move(label));
    analytic_.push_back(analytic);
    numeric_.push_back(numeric);
  }

  /// Number of recorded coordinates.
  std::size_t size() const noexcept {
    return analytic_.size();
  }

  /// Largest absolute analytic derivative.
  double scale() const noexcept {
    double m = 0;
    for (double a : analytic_)
      m = std::max(m, std::abs(a));
    return m;
  }

  /// Largest relative error over all coordinates.
  double worst() const {
    return error(worst_index(), floor());
  }

  /// Describes the worst coordinate, for INFO.
  std::string report() const {
    std::ostringstream os;
    os << size() << " coordinates, gradient scale " << scale();
    if (size() > 0) {
      const std::size_t i = worst_index();
      os << ", worst " << labels_[i] << ": analytic " << analytic_[i]
         << ", numeric " << numeric_[i] << ", error " << error(i, floor());
    }
    return os.str();
  }

private:
  double floor() const noexcept {
    return layer_grad_floor * scale();
  }

  double error(std::size_t i, double floor) const {
    if (i >= size())
      return 0;
    const double denom = std::max(
        {std::abs(analytic_[i]), std::abs(numeric_[i]), floor, 1e-300});
    return std::abs(analytic_[i] - numeric_[i]) / denom;
  }

  std::size_t worst_index() const {
    const double f = floor();
    std::size_t best = 0;
    for (std::size_t i = 1; i < size(); ++i)
      if (error(i, f) > error(best, f))
        best = i;
    return best;
  }

  std::vector<std::string> labels_;
  std::vector<double> analytic_;
  std::vector<double> numeric_;
};

} // namespace troupe::test
