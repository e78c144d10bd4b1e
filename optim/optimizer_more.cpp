// The optimizers that torch.optim does not have: NovoGrad and the delayed
// Nesterov update of asynchronous local SGD (optim/optimizer.hpp has their
// rules).

#include <cmath>

#include "optim/detail/optimizer_base.hpp"

namespace troupe::optim::detail {

namespace {

/// NovoGrad (Ginsburg et al. 2019): a second moment of the gradient's norm
/// per layer, the first of the normalized gradient plus the decay
/// (optim/optimizer.hpp has the rule).
template <class T>
class novograd final : public optimizer_base<T, novograd<T>> {
public:
  static constexpr bool own_decay = true;

  novograd(const optimizer_options& opts, std::size_t n)
      : optimizer_base<T, novograd<T>>(opts, n),
        m_(vector<T>::Zero(static_cast<Eigen::Index>(n))) {
    layers_ = opts.layers.empty() ? std::vector<std::size_t>{n} : opts.layers;
    v_ = vector<T>::Zero(static_cast<Eigen::Index>(layers_.size()));
  }

  template <class G>
  void update(vector_map<T>& p, const G& g, T lr) {
    const auto& o = this->opts_;
    auto b1 = static_cast<T>(o.beta1), b2 = static_cast<T>(o.beta2);
    auto c2 = static_cast<T>(1.0 - o.beta2), eps = static_cast<T>(o.eps);
    auto wd = static_cast<T>(o.weight_decay);
    Eigen::Index at = 0;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      auto len = static_cast<Eigen::Index>(layers_[l]);
      auto gl = g.segment(at, len); // (own_decay: g is no expression of p)
      T norm2 = gl.square().sum();
      auto& v = v_(static_cast<Eigen::Index>(l));
      v = t_ == 0 ? norm2 : b2 * v + c2 * norm2;
      T scale = T(1) / (std::sqrt(v) + eps);
      m_.segment(at, len).array() = b1 * m_.segment(at, len).array()
                                    + scale * gl
                                    + wd * p.segment(at, len).array();
      at += len;
    }
    p.array() -= lr * m_.array();
    ++t_;
  }

  void reset() override {
    m_.setZero();
    v_.setZero();
    t_ = 0;
  }

  void save_state(state_writer& w, const std::string& prefix) const {
    w.put(prefix + "exp_avg", m_.data(), this->n_);
    w.put(prefix + "layer_sq", v_.data(), layers_.size());
    w.put_u64(prefix + "step", t_);
  }

  void load_state(const state_reader& r, const std::string& prefix) {
    auto m = this->read(r, prefix + "exp_avg");
    vector<T> v(static_cast<Eigen::Index>(layers_.size()));
    if constexpr (std::is_same_v<T, float>)
      r.f32(prefix + "layer_sq", v.data(), layers_.size());
    else
      r.f64(prefix + "layer_sq", v.data(), layers_.size());
    auto t = r.u64_scalar(prefix + "step");
    m_ = std::move(m);
    v_ = std::move(v);
    t_ = static_cast<std::size_t>(t);
  }

private:
  std::vector<std::size_t> layers_;
  vector<T> m_;
  vector<T> v_; ///< per layer
  std::size_t t_ = 0;
};

/// Liu et al. 2024's delayed Nesterov momentum (optim/optimizer.hpp): the
/// momentum moves once every `delay` steps, on the mean of the gradients
/// since it last moved; every step applies its own gradient over `delay`
/// and, with an activation c > 0, a share of the momentum.
template <class T>
class delayed_nesterov final : public optimizer_base<T, delayed_nesterov<T>> {
public:
  delayed_nesterov(const optimizer_options& opts, std::size_t n)
      : optimizer_base<T, delayed_nesterov<T>>(opts, n),
        m_(vector<T>::Zero(static_cast<Eigen::Index>(n))),
        sum_(vector<T>::Zero(static_cast<Eigen::Index>(n))) {}

  template <class G>
  void update(vector_map<T>& p, const G& g, T lr) {
    const auto& o = this->opts_;
    auto beta = static_cast<T>(o.momentum);
    auto d = static_cast<double>(o.delay);
    auto per = static_cast<T>(1.0 / d);
    // g may read p (the decay), so it is used before p changes, coefficient
    // by coefficient.
    sum_.array() += g;
    if ((t_ + 1) % o.delay == 0) {
      auto share = static_cast<T>((1.0 - o.activation * d + o.activation)
                                  * o.momentum);
      m_.array() = beta * m_.array() + per * sum_.array();
      p.array() -= lr * (share * m_.array() + per * g);
      sum_.setZero();
    } else {
      auto share = static_cast<T>(o.activation * o.momentum);
      p.array() -= lr * (share * m_.array() + per * g);
    }
    ++t_;
  }

  void reset() override {
    m_.setZero();
    sum_.setZero();
    t_ = 0;
  }

  void save_state(state_writer& w, const std::string& prefix) const {
    this->save_two(w, prefix, "momentum_buffer", m_, "delayed_sum", sum_, t_);
  }

  void load_state(const state_reader& r, const std::string& prefix) {
    this->load_two(r, prefix, "momentum_buffer", m_, "delayed_sum", sum_, t_);
  }

private:
  vector<T> m_;   ///< the momentum
  vector<T> sum_; ///< the gradients since the momentum last moved
  std::size_t t_ = 0;
};

} // namespace

template <class T>
std::unique_ptr<optimizer<T>> make_novograd(const optimizer_options& opts,
                                            std::size_t n) {
  return std::make_unique<novograd<T>>(opts, n);
}

template <class T>
std::unique_ptr<optimizer<T>>
make_delayed_nesterov(const optimizer_options& opts, std::size_t n) {
  return std::make_unique<delayed_nesterov<T>>(opts, n);
}

template std::unique_ptr<optimizer<float>>
make_novograd<float>(const optimizer_options&, std::size_t);
template std::unique_ptr<optimizer<double>>
make_novograd<double>(const optimizer_options&, std::size_t);
template std::unique_ptr<optimizer<float>>
make_delayed_nesterov<float>(const optimizer_options&, std::size_t);
template std::unique_ptr<optimizer<double>>
make_delayed_nesterov<double>(const optimizer_options&, std::size_t);

} // namespace troupe::optim::detail
