// What every optimizer of optim/optimizer.hpp shares (the name, the size
// check, the coupled weight decay, the options as a state file's metadata),
// and the makers of those defined outside optim/optimizer.cpp.

#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "optim/optimizer.hpp"
#include "optim/state_file.hpp"
#include "optim/types.hpp"

namespace troupe::optim::detail {

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

  /// Two buffers of n_ values and a step count (Adam's moments, the delayed
  /// Nesterov's momentum and sum), saved under their names.
  void save_two(state_writer& w, const std::string& prefix, const char* a,
                const vector<T>& x, const char* b, const vector<T>& y,
                std::size_t t) const {
    w.put(prefix + a, x.data(), n_);
    w.put(prefix + b, y.data(), n_);
    w.put_u64(prefix + "step", t);
  }

  /// Reads what save_two() wrote; nothing changes unless all of it fits.
  void load_two(const state_reader& r, const std::string& prefix, const char* a,
                vector<T>& x, const char* b, vector<T>& y,
                std::size_t& t) const {
    auto x1 = read(r, prefix + a);
    auto y1 = read(r, prefix + b);
    auto t1 = r.u64_scalar(prefix + "step");
    x = std::move(x1);
    y = std::move(y1);
    t = static_cast<std::size_t>(t1);
  }

  /// The options this optimizer reads, as metadata.
  std::vector<std::pair<std::string, std::string>> option_texts() const {
    const auto& o = opts_;
    std::vector<std::pair<std::string, std::string>> out{
        {"name", o.name},
        {"dtype", std::is_same_v<T, float> ? "F32" : "F64"},
        {"weight_decay", exact_text(o.weight_decay)}};
    if (o.name == "momentum" || o.name == "nesterov"
        || o.name == "delayed-nesterov")
      out.emplace_back("momentum", exact_text(o.momentum));
    if (o.name == "delayed-nesterov") {
      out.emplace_back("delay", std::to_string(o.delay));
      out.emplace_back("activation", exact_text(o.activation));
    }
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

/// NovoGrad and the delayed Nesterov update (optim/optimizer_more.cpp); the
/// options are checked by make_optimizer.
template <class T>
std::unique_ptr<optimizer<T>> make_novograd(const optimizer_options& opts,
                                            std::size_t n);
template <class T>
std::unique_ptr<optimizer<T>>
make_delayed_nesterov(const optimizer_options& opts, std::size_t n);

} // namespace troupe::optim::detail
