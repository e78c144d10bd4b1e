#include "optim/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "optim/quote.hpp"
#include "optim/state_file.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

namespace {

/// Shared plumbing: name, size check and the coupled weight decay. `Derived`
/// implements `update(p, g)` for an effective gradient expression g.
template <class T, class Derived>
class optimizer_base : public optimizer<T> {
public:
  static constexpr bool own_decay = false; ///< Derived decays (novograd)
  optimizer_base(const optimizer_options& opts, std::size_t n)
      : opts_(opts), n_(n) {}

  std::string name() const override {
    return opts_.name;
  }

  void step(T* params, const T* grads, std::size_t n, double lr) override {
    if (n != n_)
      throw std::invalid_argument(
          opts_.name + ": step over " + std::to_string(n)
          + " parameters, but it was made for " + std::to_string(n_));
    auto len = static_cast<Eigen::Index>(n);
    vector_map<T> p{params, len};
    const_vector_map<T> g{grads, len};
    auto& self = static_cast<Derived&>(*this);
    auto rate = static_cast<T>(lr);
    if constexpr (Derived::own_decay)
      self.update(p, g.array(), rate);
    else if (opts_.weight_decay == 0.0)
      self.update(p, g.array(), rate);
    else
      self.update(p, g.array() + static_cast<T>(opts_.weight_decay) * p.array(),
                  rate);
  }

  void save(state_writer& w, const std::string& prefix) const override {
    for (const auto& [key, value] : option_texts())
      w.meta(prefix + key, value);
    w.put_u64(prefix + "size", n_);
    static_cast<const Derived&>(*this).save_state(w, prefix);
  }

  void load(const state_reader& r, const std::string& prefix) override {
    for (const auto& [key, value] : option_texts())
      r.expect_meta(prefix + key, value);
    r.expect_u64(prefix + "size", n_);
    static_cast<Derived&>(*this).load_state(r, prefix);
  }

protected:
  /// A buffer of n_ values, read whole before anything changes.
  vector<T> read(const state_reader& r, const std::string& name) const {
    vector<T> v(static_cast<Eigen::Index>(n_));
    if constexpr (std::is_same_v<T, float>)
      r.f32(name, v.data(), n_);
    else
      r.f64(name, v.data(), n_);
    return v;
  }

  /// The options this optimizer reads, as metadata.
  std::vector<std::pair<std::string, std::string>> option_texts() const {
    const auto& o = opts_;
    std::vector<std::pair<std::string, std::string>> out{
        {"name", o.name},
        {"dtype", std::is_same_v<T, float> ? "F32" : "F64"},
        {"weight_decay", exact_text(o.weight_decay)}};
    if (o.name == "momentum" || o.name == "nesterov")
      out.emplace_back("momentum", exact_text(o.momentum));
    if (o.name == "adam" || o.name == "novograd") {
      out.emplace_back("beta1", exact_text(o.beta1));
      out.emplace_back("beta2", exact_text(o.beta2));
    }
    if (o.name == "adam" || o.name == "adagrad" || o.name == "novograd")
      out.emplace_back("eps", exact_text(o.eps));
    if (o.name == "novograd")
      out.emplace_back(
          "layers", std::to_string(std::max<std::size_t>(o.layers.size(), 1)));
    return out;
  }

  optimizer_options opts_;
  std::size_t n_;
};

/// p -= lr * g.
template <class T>
class sgd final : public optimizer_base<T, sgd<T>> {
public:
  using optimizer_base<T, sgd<T>>::optimizer_base;

  template <class G>
  void update(vector_map<T>& p, const G& g, T lr) {
    p.array() -= lr * g;
  }

  void reset() override {}

  void save_state(state_writer&, const std::string&) const {}

  void load_state(const state_reader&, const std::string&) {}
};

/// buf = momentum * buf + g; p -= lr * buf (heavy ball), or
/// p -= lr * (g + momentum * buf) (Nesterov), as in torch.optim.SGD.
template <class T>
class momentum final : public optimizer_base<T, momentum<T>> {
public:
  momentum(const optimizer_options& opts, std::size_t n, bool nesterov)
      : optimizer_base<T, momentum<T>>(opts, n), nesterov_(nesterov),
        buf_(vector<T>::Zero(static_cast<Eigen::Index>(n))) {}

  template <class G>
  void update(vector_map<T>& p, const G& g, T lr) {
    auto mu = static_cast<T>(this->opts_.momentum);
    // g may read p, so every update below is coefficient-wise in p.
    buf_.array() = mu * buf_.array() + g;
    if (nesterov_)
      p.array() -= lr * (g + mu * buf_.array());
    else
      p.array() -= lr * buf_.array();
  }

  void reset() override {
    buf_.setZero();
  }

  void save_state(state_writer& w, const std::string& prefix) const {
    w.put(prefix + "momentum_buffer", buf_.data(), this->n_);
  }

  void load_state(const state_reader& r, const std::string& prefix) {
    buf_ = this->read(r, prefix + "momentum_buffer");
  }

private:
  bool nesterov_;
  vector<T> buf_;
};

/// acc += g^2; p -= lr * g / (sqrt(acc) + eps).
template <class T>
class adagrad final : public optimizer_base<T, adagrad<T>> {
public:
  adagrad(const optimizer_options& opts, std::size_t n)
      : optimizer_base<T, adagrad<T>>(opts, n),
        acc_(vector<T>::Zero(static_cast<Eigen::Index>(n))) {}

  template <class G>
  void update(vector_map<T>& p, const G& g, T lr) {
    auto eps = static_cast<T>(this->opts_.eps);
    acc_.array() += g.square();
    p.array() -= lr * g / (acc_.array().sqrt() + eps);
  }

  void reset() override {
    acc_.setZero();
  }

  void save_state(state_writer& w, const std::string& prefix) const {
    w.put(prefix + "sum", acc_.data(), this->n_);
  }

  void load_state(const state_reader& r, const std::string& prefix) {
    acc_ = this->read(r, prefix + "sum");
  }

private:
  vector<T> acc_;
};

/// Adam with bias correction, as in torch.optim.Adam:
/// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
template <class T>
class adam final : public optimizer_base<T, adam<T>> {
public:
  adam(const optimizer_options& opts, std::size_t n)
      : optimizer_base<T, adam<T>>(opts, n),
        m_(vector<T>::Zero(static_cast<Eigen::Index>(n))),
        v_(vector<T>::Zero(static_cast<Eigen::Index>(n))) {}

  template <class G>
  void update(vector_map<T>& p, const G& g, T lr) {
    const auto& o = this->opts_;
    ++t_;
    auto b1 = static_cast<T>(o.beta1);
    auto b2 = static_cast<T>(o.beta2);
    auto t = static_cast<double>(t_);
    auto step_size = static_cast<T>(static_cast<double>(lr)
                                    / (1.0 - std::pow(o.beta1, t)));
    auto root_bc2 = static_cast<T>(std::sqrt(1.0 - std::pow(o.beta2, t)));
    auto eps = static_cast<T>(o.eps);
    // 1 - beta in double: in float, 1 - 0.999f is off by 1e-5 relative.
    auto c1 = static_cast<T>(1.0 - o.beta1);
    auto c2 = static_cast<T>(1.0 - o.beta2);
    m_.array() = b1 * m_.array() + c1 * g;
    v_.array() = b2 * v_.array() + c2 * g.square();
    p.array() -= step_size * m_.array() / (v_.array().sqrt() / root_bc2 + eps);
  }

  void reset() override {
    m_.setZero();
    v_.setZero();
    t_ = 0;
  }

  void save_state(state_writer& w, const std::string& prefix) const {
    w.put(prefix + "exp_avg", m_.data(), this->n_);
    w.put(prefix + "exp_avg_sq", v_.data(), this->n_);
    w.put_u64(prefix + "step", t_);
  }

  void load_state(const state_reader& r, const std::string& prefix) {
    auto m = this->read(r, prefix + "exp_avg");
    auto v = this->read(r, prefix + "exp_avg_sq");
    auto t = r.u64_scalar(prefix + "step");
    m_ = std::move(m);
    v_ = std::move(v);
    t_ = static_cast<std::size_t>(t);
  }

private:
  vector<T> m_;
  vector<T> v_;
  std::size_t t_ = 0;
};

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

std::string known_names() {
  std::string result;
  for (const auto& name : optimizer_names())
    result += (result.empty() ? "" : ", ") + name;
  return result;
}

void check(bool ok, const std::string& what) {
  if (!ok)
    throw std::invalid_argument("optimizer: " + what);
}

void validate(const optimizer_options& o) {
  check(o.weight_decay >= 0,
        "weight_decay must be >= 0, got " + std::to_string(o.weight_decay));
  check(o.momentum >= 0 && o.momentum < 1,
        "momentum must be in [0, 1), got " + std::to_string(o.momentum));
  check(o.beta1 >= 0 && o.beta1 < 1,
        "beta1 must be in [0, 1), got " + std::to_string(o.beta1));
  check(o.beta2 >= 0 && o.beta2 < 1,
        "beta2 must be in [0, 1), got " + std::to_string(o.beta2));
  check(o.eps >= 0, "eps must be >= 0, got " + std::to_string(o.eps));
}

} // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names{
      "sgd", "momentum", "nesterov", "adagrad", "adam", "novograd"};
  return names;
}

template <class T>
std::unique_ptr<optimizer<T>> make_optimizer(const optimizer_options& opts,
                                             std::size_t n) {
  validate(opts);
  const auto& name = opts.name;
  if (name == "sgd")
    return std::make_unique<sgd<T>>(opts, n);
  if (name == "momentum" || name == "nesterov")
    return std::make_unique<momentum<T>>(opts, n, name == "nesterov");
  if (name == "adagrad")
    return std::make_unique<adagrad<T>>(opts, n);
  if (name == "adam")
    return std::make_unique<adam<T>>(opts, n);
  if (name == "novograd") {
    std::size_t sum = 0;
    for (auto l : opts.layers) {
      check(l > 0, "novograd: a layer of 0 parameters");
      sum += l;
    }
    check(opts.layers.empty() || sum == n,
          "novograd: layers of " + std::to_string(sum) + " parameters for "
              + std::to_string(n));
    return std::make_unique<novograd<T>>(opts, n);
  }
  throw std::invalid_argument("unknown optimizer " + quote(name)
                              + " (known: " + known_names() + ")");
}

void check_optimizer(const optimizer_options& opts) {
  make_optimizer<float>(for_slice(opts, 0, 1), 1);
}

optimizer_options for_slice(const optimizer_options& opts, std::size_t offset,
                            std::size_t size) {
  if (opts.layers.empty())
    return opts;
  auto out = opts;
  out.layers.clear();
  std::size_t at = 0;
  for (auto l : opts.layers) {
    auto from = std::max(at, offset);
    auto to = std::min(at + l, offset + size);
    if (from < to)
      out.layers.push_back(to - from);
    at += l;
  }
  return out;
}

template std::unique_ptr<optimizer<float>>
make_optimizer<float>(const optimizer_options&, std::size_t);
template std::unique_ptr<optimizer<double>>
make_optimizer<double>(const optimizer_options&, std::size_t);

} // namespace troupe::optim
