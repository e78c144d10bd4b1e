// Byzantine-robust aggregation rules (issue [15]), behind the aggregation
// seam of optim/aggregate.hpp: each combines one round's contributions so
// that up to f arbitrary ones move the result only within known bounds.
// Unlike the mean they weigh every contribution alike (a Byzantine worker
// could claim any sample count). A contribution holding a non-finite value
// is left out before any rule runs (counted as discarded). No CAF.
//
// Rules and their sources (docs/algorithms.md, "Byzantine-robust rules"):
//   median        coordinate-wise median (Yin et al., ICML 2018)
//   trimmed_mean  coordinate-wise, b = f largest and smallest dropped (same)
//   krum, multi_krum  (Blanchard et al., NeurIPS 2017)
//   geomed        geometric median by Weiszfeld's iteration (as in RFA,
//                 Pillutla et al. 2019), smoothed by nu
//   cclip         centered clipping around the last aggregate
//                 (Karimireddy, He, Jaggi, ICML 2021)
//   cge           comparative gradient elimination: the n - f smallest norms,
//                 averaged (Gupta, Liu, Vaidya 2020)
//   licm          Lipschitz-inspired coordinate-wise median (Yang et al.,
//                 CDC 2019; the filter as reconstructed in docs)

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "optim/aggregate.hpp"

namespace troupe::optim {

/// The base of the robust rules: drops non-finite contributions, then runs
/// the rule on the rest; records what it discarded.
class robust_rule : public aggregation_rule {
public:
  explicit robust_rule(rule_options o) : opts_(o) {}

  void combine(const contribution* xs, std::size_t count, std::size_t n,
               float* out) final;

  std::vector<std::uint32_t> discarded() const override {
    return discarded_;
  }

protected:
  /// The rule proper, on finite contributions only (count >= 1).
  virtual void run(const contribution* xs, std::size_t count, std::size_t n,
                   float* out)
      = 0;

  /// Marks worker `w` discarded in this round.
  void discard(std::uint32_t w) {
    discarded_.push_back(w);
  }

  rule_options opts_;

private:
  std::vector<std::uint32_t> discarded_;
  std::vector<contribution> finite_;
};

/// Coordinate-wise median: for each coordinate the middle value (even
/// count: the mean of the two middle ones, in double). Tolerates f < n/2.
class coordinate_median final : public robust_rule {
public:
  using robust_rule::robust_rule;
  std::string name() const override {
    return "median";
  }

protected:
  void run(const contribution* xs, std::size_t count, std::size_t n,
           float* out) override;
};

/// Coordinate-wise trimmed mean: per coordinate the b = f largest and b
/// smallest values dropped, the rest averaged (in double); b shrinks to
/// (count - 1) / 2 when fewer contributions came.
class trimmed_mean final : public robust_rule {
public:
  using robust_rule::robust_rule;
  std::string name() const override {
    return "trimmed_mean";
  }

protected:
  void run(const contribution* xs, std::size_t count, std::size_t n,
           float* out) override;
};

/// Krum (m = 1) and multi-Krum: score(i) = the sum of the squared distances
/// to its count - f - 2 nearest others (at least 1); the m lowest scores
/// averaged (ties: the lower worker id). Needs n > 2f + 2 for its bound.
class krum final : public robust_rule {
public:
  krum(rule_options o, bool multi) : robust_rule(o), multi_(multi) {}
  std::string name() const override {
    return multi_ ? "multi_krum" : "krum";
  }

protected:
  void run(const contribution* xs, std::size_t count, std::size_t n,
           float* out) override;

private:
  bool multi_;
};

/// Geometric median (Weiszfeld from the coordinate-wise median, in double):
/// z <- sum_i x_i / max(nu, |x_i - z|) / sum_i 1 / max(nu, |x_i - z|).
class geometric_median final : public robust_rule {
public:
  using robust_rule::robust_rule;
  std::string name() const override {
    return "geomed";
  }
  /// Iterations the last round took.
  std::uint32_t iterations() const noexcept {
    return iterations_;
  }

protected:
  void run(const contribution* xs, std::size_t count, std::size_t n,
           float* out) override;

private:
  std::uint32_t iterations_ = 0;
};

/// Centered clipping: v starts at the last round's aggregate (0 at first);
/// clip_iterations times v <- v + mean_i (x_i - v) min(1, tau / |x_i - v|).
class centered_clipping final : public robust_rule {
public:
  using robust_rule::robust_rule;
  std::string name() const override {
    return "cclip";
  }
  /// The center (the last round's aggregate).
  void save(state_writer& w, const std::string& prefix) const override;
  void load(const state_reader& r, const std::string& prefix) override;

protected:
  void run(const contribution* xs, std::size_t count, std::size_t n,
           float* out) override;

private:
  std::vector<double> center_;
};

/// CGE: the count - f contributions of smallest norm (ties: the lower
/// worker id), averaged.
class comparative_elimination final : public robust_rule {
public:
  using robust_rule::robust_rule;
  std::string name() const override {
    return "cge";
  }

protected:
  void run(const contribution* xs, std::size_t count, std::size_t n,
           float* out) override;
};

/// LICM: each worker's change of gradient since its last contribution,
/// |g_i(t) - g_i(prev)|, stands for its empirical Lipschitz ratio (the
/// parameters' change is common to the round); the workers at or below the
/// median change are kept (a worker seen for the first time is kept), and
/// the coordinate-wise median of the kept ones is the result. Needs neither
/// f nor the Lipschitz constant.
class lipschitz_median final : public robust_rule {
public:
  using robust_rule::robust_rule;
  std::string name() const override {
    return "licm";
  }
  /// Each worker's last gradient.
  void save(state_writer& w, const std::string& prefix) const override;
  void load(const state_reader& r, const std::string& prefix) override;

protected:
  void run(const contribution* xs, std::size_t count, std::size_t n,
           float* out) override;

private:
  std::map<std::uint32_t, std::vector<float>> last_;
};

/// The coordinate-wise median of `xs` into `out` (the median rule's core).
void median_of(const contribution* xs, std::size_t count, std::size_t n,
               float* out);

} // namespace troupe::optim
