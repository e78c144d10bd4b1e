#include "optim/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "optim/detail/optimizer_base.hpp"
#include "optim/quote.hpp"
#include "optim/state_file.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

namespace {

using detail::optimizer_base;

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
    this->save_two(w, prefix, "exp_avg", m_, "exp_avg_sq", v_, t_);
  }

  void load_state(const state_reader& r, const std::string& prefix) {
    this->load_two(r, prefix, "exp_avg", m_, "exp_avg_sq", v_, t_);
  }

private:
  vector<T> m_;
  vector<T> v_;
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
  if (o.name == "delayed-nesterov") {
    check(o.delay >= 1, "delayed-nesterov: a delay of 0 pseudo-gradients");
    check(o.activation >= 0 && o.activation <= 1,
          "delayed-nesterov: activation must be in [0, 1], got "
              + std::to_string(o.activation));
  }
}

} // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names{
      "sgd",  "momentum", "nesterov",        "adagrad",
      "adam", "novograd", "delayed-nesterov"};
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
    return detail::make_novograd<T>(opts, n);
  }
  if (name == "delayed-nesterov")
    return detail::make_delayed_nesterov<T>(opts, n);
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
