// Byzantine workers (issue [15]): what an attacking worker sends instead of
// its honest gradient, as a replica that wraps the honest one
// (byzantine_replica). The worker core, the policies and the shards see an
// ordinary replica whose gradients are hostile. No CAF.
//
// Attacks (docs/algorithms.md, "Attacks"; n workers, f of them Byzantine):
//   sign_flip   -c * g, g the attacker's own honest gradient (c:
//   --attack-scale) gaussian    N(0, sigma^2) per coordinate (sigma:
//   --attack-sigma) label_flip  the honest gradient on labels y -> C - 1 - y
//   alie        mu - z * sd per coordinate, mu and sd over k honest gradients
//               (Baruch et al., NeurIPS 2019: z = Phi^-1((n - s) / n),
//               s = floor(n / 2 + 1) - f)
//   ipm         -eps * mu (Xie, Koyejo, Gupta 2019; eps: --attack-scale)
//   nan, inf    every coordinate NaN, or +inf
// mu and sd come from a scout: a replica over the whole training set whose
// batches every attacker draws alike (the same seed), evaluated at the
// attacker's parameters. In a synchronous round every attacker holds the
// same parameters, so they send the same vector: they collude without a
// message.

#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "optim/replica_wrapper.hpp"

namespace troupe::optim {

enum class attack_kind { sign_flip, gaussian, label_flip, alie, ipm, nan, inf };

/// The attack named `name`; throws std::invalid_argument listing the names.
attack_kind parse_attack(const std::string& name);

/// The attacks' names, in the order of attack_kind.
std::vector<std::string> attack_names();

std::string to_string(attack_kind k);

/// The standard normal quantile Phi^-1(p), p in (0, 1) (Acklam's rational
/// approximation refined by one Halley step: |error| < 1e-12).
double normal_quantile(double p);

/// ALIE's z for n workers of which f attack: Phi^-1((n - s) / n) with
/// s = floor(n / 2 + 1) - f, as in the paper. 0 when (n - s) / n <= 1/2 (the
/// attack is then the honest mean). The variant over the n - f honest ones,
/// Phi^-1((n - f - s) / (n - f)), is z = 0 at n = 10, f = 2 (s = 4): the
/// honest mean, no attack at all; the paper's is 0.253 there.
double alie_z(std::uint32_t n, std::uint32_t f);

struct attack_options {
  attack_kind kind = attack_kind::sign_flip;
  double scale = 1.0;              ///< sign flip's c, IPM's eps
  double sigma = 100;              ///< Gaussian noise's standard deviation
  std::uint32_t workers = 0;       ///< n
  std::uint32_t byzantine = 0;     ///< f
  std::uint32_t scout_batches = 4; ///< k for ALIE's and IPM's mu and sd
  std::uint64_t seed = 1;
};

/// Throws std::invalid_argument naming the setting out of range.
void validate(const attack_options& o);

/// An attacking worker's replica: computes the honest gradient of `inner`,
/// then replaces it as the attack says. `scout` (ALIE, IPM; else null): a
/// replica of the same model over the data the attackers estimate mu and sd
/// from. `classes`: the label count (label flip).
class byzantine_replica final : public replica_wrapper {
public:
  /// Its gradient is not the model's pass's: no sufficient factors.
  pass_view last_pass() const noexcept override {
    return {};
  }
  byzantine_replica(std::unique_ptr<replica> inner,
                    std::unique_ptr<replica> scout, attack_options o,
                    std::int32_t classes, std::uint32_t worker);

  step_result compute() override;
  bool byzantine() const noexcept override {
    return true;
  }

  /// The z ALIE uses (0 for the other attacks).
  double z() const noexcept {
    return z_;
  }

private:
  /// mu and sd over the scout's k gradients at this replica's parameters.
  void estimate();
  /// Replaces the honest gradient g[0..n) by the attack's.
  void attack(float* g, std::size_t n);

  std::unique_ptr<replica> scout_;
  attack_options opts_;
  double z_ = 0;
  std::mt19937_64 rng_;
  std::vector<double> mu_, sd_;
  /// The last honest computation's batch size (a step whose model was no
  /// longer finite reports it).
  std::size_t samples_ = 0;
};

} // namespace troupe::optim
