#include "algos/allreduce/reducer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "algos/allreduce/sfb_reducer.hpp"
#include "optim/low_rank.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

void check_reducer(const reducer_options& o) {
  if (o.kind != "dense" && o.kind != "powersgd" && o.kind != "scalecom"
      && o.kind != "sfb")
    throw std::invalid_argument("--reducer must be dense, powersgd, "
                                "scalecom or sfb, not '"
                                + o.kind + "'");
  if (o.sfb_layers != "auto" && o.sfb_layers != "all")
    throw std::invalid_argument("--sfb-layers must be auto or all, not '"
                                + o.sfb_layers + "'");
  if (o.rank < 1 || o.rank > 1024)
    throw std::invalid_argument("--powersgd-rank must be in [1, 1024]");
  if (!(o.density > 0 && o.density <= 1))
    throw std::invalid_argument("--scalecom-density must be in (0, 1]");
  if (!(o.beta > 0 && o.beta <= 1 && static_cast<float>(o.beta) > 0))
    throw std::invalid_argument("--scalecom-beta must be in (0, 1]");
}

namespace {

/// ScaleCom's k of n entries at `density` (at least 1).
std::size_t scalecom_k(double density, std::size_t n) {
  auto k = static_cast<std::size_t>(density * static_cast<double>(n));
  return std::min(std::max<std::size_t>(k, 1), n);
}

/// The sum over the examples of the step: the plain gradient.
class dense_reducer : public reducer {
public:
  explicit dense_reducer(std::size_t n) : n_(n) {}

  std::size_t exchanges() const noexcept override {
    return 1;
  }
  std::size_t length(std::size_t) const noexcept override {
    return n_;
  }
  void begin(std::uint64_t, const float* g, std::uint32_t samples,
             float* out) override {
    auto w = static_cast<float>(samples);
    for (std::size_t i = 0; i < n_; ++i)
      out[i] = samples > 0 ? g[i] * w : 0.0f;
  }
  bool next(std::size_t, const float* sum, std::uint64_t total, float*,
            float* mean, std::string&) override {
    auto t = static_cast<float>(total);
    for (std::size_t i = 0; i < n_; ++i)
      mean[i] = total > 0 ? sum[i] / t : 0.0f;
    return false;
  }

private:
  std::size_t n_;
};

/// Error feedback: m = g + e; after the step e = m - what was applied.
class feedback {
protected:
  explicit feedback(std::size_t n) : n_(n), e_(n, 0.0f), m_(n, 0.0f) {}

  void accumulate(const float* g, std::uint32_t samples) {
    for (std::size_t i = 0; i < n_; ++i)
      m_[i] = e_[i] + (samples > 0 ? g[i] : 0.0f);
    s_ = static_cast<float>(samples);
  }

  double norm() const noexcept {
    double s = 0;
    for (auto v : e_)
      s += double{v} * v;
    return std::sqrt(s);
  }

  void save_memory(optim::state_writer& w, const std::string& prefix) const {
    w.put(prefix + "memory", e_);
  }

  void load_memory(const optim::state_reader& r, const std::string& prefix) {
    r.f32(prefix + "memory", e_.data(), n_);
  }

  std::size_t n_;
  std::vector<float> e_, m_;
  float s_ = 0; ///< the step's examples: the weight of this worker's part
};

/// PowerSGD (Vogels et al. 2019) with error feedback and warm start.
class powersgd_reducer : public reducer, feedback {
public:
  powersgd_reducer(const reducer_options& o, std::size_t n)
      : feedback(n), l_(optim::make_powersgd_layout(o.layers, n, o.rank)),
        q_(optim::powersgd_start(l_, o.seed)), p_(l_.p_length),
        dense_mean_(n, 0.0f) {}

  std::size_t exchanges() const noexcept override {
    return 2;
  }
  std::size_t length(std::size_t e) const noexcept override {
    return e == 0 ? l_.p_length : l_.q_length;
  }

  /// P = s M Q of each matrix, then s times the dense parts.
  void begin(std::uint64_t, const float* g, std::uint32_t samples,
             float* out) override {
    accumulate(g, samples);
    auto r = l_.rank;
    std::size_t at = 0, qa = 0;
    for (const auto& m : l_.matrices) {
      optim::low_rank_project(m_.data() + m.offset, m.rows, m.cols,
                              q_.data() + qa, r, out + at);
      for (std::size_t i = 0; i < m.rows * r; ++i)
        out[at + i] *= s_;
      at += m.rows * r;
      qa += m.cols * r;
    }
    for (const auto& d : l_.dense)
      for (std::size_t i = 0; i < d.size; ++i)
        out[at++] = m_[d.offset + i] * s_;
  }

  bool next(std::size_t e, const float* sum, std::uint64_t total, float* out,
            float* mean, std::string&) override {
    auto r = l_.rank;
    auto t = static_cast<float>(total);
    if (e == 0) { // P's sum: orthonormalize; Q = s M^T P
      std::copy(sum, sum + l_.p_length, p_.begin());
      std::size_t at = 0, qa = 0;
      for (const auto& m : l_.matrices) {
        optim::orthonormalize(p_.data() + at, m.rows, r);
        optim::low_rank_back(m_.data() + m.offset, m.rows, m.cols,
                             p_.data() + at, r, out + qa);
        for (std::size_t i = 0; i < m.cols * r; ++i)
          out[qa + i] *= s_;
        at += m.rows * r;
        qa += m.cols * r;
      }
      for (const auto& d : l_.dense)
        for (std::size_t i = 0; i < d.size; ++i, ++at)
          dense_mean_[d.offset + i] = total > 0 ? sum[at] / t : 0.0f;
      return true;
    }
    // Q's sum over the examples: the mean gradient P Q^T; the next step
    // starts from this Q.
    std::fill(mean, mean + n_, 0.0f);
    if (total == 0)
      return false; // nothing finite: e keeps m
    for (std::size_t i = 0; i < l_.q_length; ++i)
      q_[i] = sum[i] / t;
    std::size_t at = 0, qa = 0;
    for (const auto& m : l_.matrices) {
      optim::low_rank_expand(p_.data() + at, q_.data() + qa, m.rows, m.cols, r,
                             mean + m.offset);
      at += m.rows * r;
      qa += m.cols * r;
    }
    for (const auto& d : l_.dense)
      std::copy(dense_mean_.begin() + static_cast<std::ptrdiff_t>(d.offset),
                dense_mean_.begin()
                    + static_cast<std::ptrdiff_t>(d.offset + d.size),
                mean + d.offset);
    for (std::size_t i = 0; i < n_; ++i)
      e_[i] = m_[i] - mean[i];
    for (const auto& d : l_.dense) // sent whole: no error
      std::fill(e_.begin() + static_cast<std::ptrdiff_t>(d.offset),
                e_.begin() + static_cast<std::ptrdiff_t>(d.offset + d.size),
                0.0f);
    return false;
  }

  double residual_norm() const noexcept override {
    return norm();
  }

  void save(optim::state_writer& w, const std::string& prefix) const override {
    save_memory(w, prefix);
    w.put(prefix + "q", q_);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    std::vector<float> q(q_.size());
    r.f32(prefix + "q", q.data(), q.size());
    load_memory(r, prefix);
    q_ = std::move(q);
  }

private:
  optim::powersgd_layout l_;
  std::vector<float> q_, p_, dense_mean_;
};

/// ScaleCom (Chen et al. 2020): cyclic local top-k with error feedback
/// through a low-pass filter (optim::scalecom_memory).
class scalecom_reducer : public reducer, feedback {
public:
  scalecom_reducer(const reducer_options& o, std::size_t n,
                   std::uint32_t workers, std::uint32_t rank)
      : feedback(n), k_(scalecom_k(o.density, n)),
        beta_(static_cast<float>(o.beta)), workers_(workers), rank_(rank) {}

  std::size_t exchanges() const noexcept override {
    return 2;
  }
  std::size_t length(std::size_t e) const noexcept override {
    return e == 0 ? 2 * k_ : k_;
  }

  /// The leader's top-k indices of its m (the others send zeros).
  void begin(std::uint64_t step, const float* g, std::uint32_t samples,
             float* out) override {
    accumulate(g, samples);
    std::fill(out, out + 2 * k_, 0.0f);
    if (optim::cyclic_leader(step, workers_) == rank_ && samples > 0)
      optim::encode_indices(optim::top_k_indices(m_.data(), n_, k_), out);
  }

  bool next(std::size_t e, const float* sum, std::uint64_t total, float* out,
            float* mean, std::string& problem) override {
    if (e == 0) {
      problem = optim::decode_indices(sum, k_, n_, idx_);
      if (!problem.empty()) {
        problem = "the leader's top-k indices: " + problem;
        return false;
      }
      std::fill(out, out + k_, 0.0f);
      for (std::size_t j = 0; j < idx_.size(); ++j)
        out[j] = m_[idx_[j]] * s_;
      return true;
    }
    std::fill(mean, mean + n_, 0.0f);
    if (total == 0) { // nothing sent
      optim::scalecom_memory(e_.data(), m_.data(), n_, {}, beta_);
      return false;
    }
    auto t = static_cast<float>(total);
    for (std::size_t j = 0; j < idx_.size(); ++j)
      mean[idx_[j]] = sum[j] / t;
    optim::scalecom_memory(e_.data(), m_.data(), n_, idx_, beta_);
    return false;
  }

  double residual_norm() const noexcept override {
    return norm();
  }

  void save(optim::state_writer& w, const std::string& prefix) const override {
    save_memory(w, prefix);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    load_memory(r, prefix);
  }

private:
  std::size_t k_;
  float beta_;
  std::uint32_t workers_, rank_;
  std::vector<std::uint32_t> idx_;
};

} // namespace

std::unique_ptr<reducer> make_reducer(const reducer_options& o, std::size_t n,
                                      std::uint32_t workers,
                                      std::uint32_t rank) {
  check_reducer(o);
  if (o.kind == "powersgd")
    return std::make_unique<powersgd_reducer>(o, n);
  if (o.kind == "scalecom")
    return std::make_unique<scalecom_reducer>(o, n, workers, rank);
  if (o.kind == "sfb")
    return make_sfb_reducer(o, n, workers, rank);
  return std::make_unique<dense_reducer>(n);
}

std::size_t reducer_values(const reducer_options& o, std::size_t n,
                           std::uint32_t workers) {
  check_reducer(o);
  auto padded = [workers](std::size_t len) {
    return std::max<std::size_t>(len, workers);
  };
  if (o.kind == "powersgd") {
    auto l = optim::make_powersgd_layout(o.layers, n, o.rank);
    return padded(l.p_length) + padded(l.q_length);
  }
  if (o.kind == "scalecom") {
    auto k = scalecom_k(o.density, n);
    return padded(2 * k) + padded(k);
  }
  if (o.kind == "sfb")
    return padded(sfb_length(o, n, workers));
  return padded(n);
}

} // namespace troupe::algos
