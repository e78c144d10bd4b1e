#include "optim/batch_norm.hpp"

#include <cmath>
#include <stdexcept>

namespace troupe::optim {

template <class T>
batch_norm<T>::batch_norm(double eps, double momentum)
    : eps_(eps), momentum_(momentum) {
  if (!(eps > 0) || !(momentum > 0 && momentum <= 1))
    throw std::invalid_argument("batch_norm: needs eps > 0 and momentum in "
                                "(0, 1]");
}

template <class T>
shape batch_norm<T>::setup(const shape& in) {
  if (in.size() == 0)
    throw std::invalid_argument("empty input shape");
  spatial_ = in.h * in.w > 1;
  groups_ = spatial_ ? in.c : static_cast<int>(in.size());
  per_sample_ = spatial_ ? in.h * in.w : 1;
  return in;
}

template <class T>
void batch_norm<T>::declare(range_table& table, const std::string& prefix) {
  const auto g = static_cast<std::size_t>(groups_);
  table.add(prefix + ".weight", g, range_kind::weight);
  table.add(prefix + ".bias", g, range_kind::bias);
}

template <class T>
void batch_norm<T>::bind(T* params, T* grads) {
  w_ = params;
  dw_ = grads;
}

template <class T>
void batch_norm<T>::init(rng&) {
  for (int i = 0; i < groups_; ++i) {
    w_[i] = T{1};
    w_[groups_ + i] = T{0};
  }
}

template <class T>
void batch_norm<T>::declare_buffers(range_table& table,
                                    const std::string& prefix) {
  const auto g = static_cast<std::size_t>(groups_);
  table.add(prefix + ".running_mean", g, range_kind::buffer);
  table.add(prefix + ".running_var", g, range_kind::buffer);
}

template <class T>
void batch_norm<T>::reset_buffers() {
  for (int i = 0; i < groups_; ++i) {
    running_[i] = T{0};
    running_[groups_ + i] = T{1};
  }
  calibrated_ = 0;
}

namespace {

/// The input as values x groups: a group's values form one column. Planes
/// (C, B, H, W) are that already; per-sample columns (F x B) are its
/// transpose.
template <class T>
void by_group(const matrix<T>& m, bool spatial, int groups, matrix<T>& out) {
  out.resize(m.size() / groups, groups);
  if (spatial)
    out = const_matrix_map<T>(m.data(), m.size() / groups, groups);
  else
    out = m.transpose();
}

template <class T>
void from_group(const matrix<T>& g, bool spatial, Eigen::Index rows,
                Eigen::Index cols, matrix<T>& out) {
  out.resize(rows, cols);
  if (spatial)
    matrix_map<T>(out.data(), g.rows(), g.cols()) = g;
  else
    out = g.transpose();
}

} // namespace

template <class T>
void batch_norm<T>::forward(const matrix<T>& in, matrix<T>& out) {
  by_group(in, spatial_, groups_, gx_);
  const matrix<T>& x = gx_;
  const Eigen::Index n = x.rows(); // values per group in this batch
  const T* gamma = w_;
  const T* beta = w_ + groups_;
  T* mean_buf = running_;
  T* var_buf = running_ + groups_;
  batch_stats_ = pass_ != optim::pass::inference;
  inv_std_.resize(groups_);
  xhat_.resize(n, groups_);
  matrix<T>& y = gy_;
  y.resize(n, groups_);
  if (batch_stats_ && pass_ == optim::pass::calibration)
    ++calibrated_;
  for (int g = 0; g < groups_; ++g) {
    auto col = x.col(g).array();
    T mean, var;
    if (batch_stats_) {
      mean = col.mean();
      var = (col - mean).square().mean();
      const T unbiased
          = n > 1 ? var * static_cast<T>(n) / static_cast<T>(n - 1) : var;
      const T m = pass_ == optim::pass::calibration
                      ? T{1} / static_cast<T>(calibrated_)
                      : static_cast<T>(momentum_);
      mean_buf[g] += m * (mean - mean_buf[g]);
      var_buf[g] += m * (unbiased - var_buf[g]);
    } else {
      mean = mean_buf[g];
      var = var_buf[g];
    }
    inv_std_[g] = T{1} / std::sqrt(var + static_cast<T>(eps_));
    xhat_.col(g) = (col - mean) * inv_std_[g];
    y.col(g) = xhat_.col(g).array() * gamma[g] + beta[g];
  }
  from_group(y, spatial_, in.rows(), in.cols(), out);
}

template <class T>
void batch_norm<T>::backward(const matrix<T>& in, const matrix<T>& out,
                             const matrix<T>& dout, matrix<T>* din) {
  by_group(dout, spatial_, groups_, gy_);
  const matrix<T>& dy = gy_;
  const Eigen::Index n = dy.rows();
  matrix<T>& dx = gx_;
  dx.resize(n, groups_);
  for (int g = 0; g < groups_; ++g) {
    auto d = dy.col(g).array();
    auto xh = xhat_.col(g).array();
    const T dgamma = (d * xh).sum();
    const T dbeta = d.sum();
    dw_[g] = dgamma;
    dw_[groups_ + g] = dbeta;
    if (din == nullptr)
      continue;
    const T gamma = w_[g];
    if (batch_stats_) {
      // d xhat = gamma dy; dx = inv_std / n (n dxhat - sum dxhat
      //                                      - xhat sum(dxhat xhat))
      dx.col(g) = (gamma * inv_std_[g] / static_cast<T>(n))
                  * (static_cast<T>(n) * d - dbeta - xh * dgamma);
    } else {
      dx.col(g) = gamma * inv_std_[g] * d;
    }
  }
  if (din != nullptr)
    from_group(dx, spatial_, dout.rows(), dout.cols(), *din);
}

template class batch_norm<float>;
template class batch_norm<double>;

} // namespace troupe::optim
