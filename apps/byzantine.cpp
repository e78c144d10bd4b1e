#include "apps/byzantine.hpp"

#include <stdexcept>

#include "actors/detail/log.hpp"
#include "apps/cli.hpp"
#include "optim/attack.hpp"
#include "optim/worker_momentum.hpp"

namespace troupe::apps {

namespace {

optim::attack_options attack_of(const train_options& o) {
  optim::attack_options a;
  a.kind = optim::parse_attack(o.attack);
  a.scale = o.attack_scale;
  a.sigma = o.attack_sigma;
  a.workers = static_cast<std::uint32_t>(o.workers);
  a.byzantine = static_cast<std::uint32_t>(o.byzantine);
  a.scout_batches = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(o.attack_batches, 1000));
  a.seed = o.seed;
  return a;
}

} // namespace

void check_byzantine(const train_options& o) {
  auto fail = [](const std::string& what) {
    throw usage_error("troupe train: " + what);
  };
  if (!(o.worker_momentum >= 0 && o.worker_momentum < 1))
    fail("--worker-momentum must be in [0, 1) (0: off)");
  if (o.worker_momentum > 0
      && o.algorithm_ref().run_by() != algos::runner::coordinator)
    fail("--worker-momentum applies to the algorithms run by actors, not "
         "--algo="
         + o.algo);
  train_options plain;
  bool attack_flags = o.attack != plain.attack
                      || o.attack_scale != plain.attack_scale
                      || o.attack_sigma != plain.attack_sigma
                      || o.attack_batches != plain.attack_batches;
  if (o.byzantine == 0) {
    if (attack_flags)
      fail("--attack and its settings apply with --byzantine=F (F > 0)");
    return;
  }
  if (o.algorithm_ref().run_by() != algos::runner::coordinator)
    fail("--byzantine applies to the algorithms run by actors with workers "
         "that compute gradients, not --algo="
         + o.algo);
  if (o.byzantine >= o.workers)
    fail("--byzantine=" + std::to_string(o.byzantine)
         + " must be below --workers=" + std::to_string(o.workers)
         + " (at least one honest worker)");
  try {
    optim::validate(attack_of(o));
  } catch (const std::invalid_argument& e) {
    fail(std::string{"--attack: "} + e.what());
  }
}

void add_byzantine(const train_options& o, actors::job_config& job,
                   std::function<std::unique_ptr<optim::replica>()> make_scout,
                   int classes) {
  if (o.worker_momentum > 0) {
    auto plain = job.make_replica;
    auto beta = o.worker_momentum;
    job.make_replica
        = [plain,
           beta](messages::worker_id w) -> std::unique_ptr<optim::replica> {
      return std::make_unique<optim::momentum_replica>(plain(w), beta);
    };
  }
  if (o.byzantine == 0)
    return;
  auto a = attack_of(o);
  auto first = static_cast<messages::worker_id>(o.workers - o.byzantine);
  for (auto w = first; w < o.workers; ++w)
    job.byzantine.push_back(w);
  auto honest = job.make_replica;
  bool scouts
      = a.kind == optim::attack_kind::alie || a.kind == optim::attack_kind::ipm;
  job.make_replica
      = [honest, make_scout, a, first, classes,
         scouts](messages::worker_id w) -> std::unique_ptr<optim::replica> {
    auto r = honest(w);
    if (w < first)
      return r;
    auto b = std::make_unique<optim::byzantine_replica>(
        std::move(r), scouts ? make_scout() : nullptr, a, classes, w);
    actors::detail::log().info(
        "worker {} is Byzantine: {}{}", w, optim::to_string(a.kind),
        a.kind == optim::attack_kind::alie ? fmt::format(" (z {:.3f})", b->z())
                                           : std::string{});
    return b;
  };
}

nlohmann::json byzantine_report(const train_options& o) {
  if (o.byzantine == 0)
    return nullptr;
  auto a = attack_of(o);
  auto ids = nlohmann::json::array();
  for (auto w = o.workers - o.byzantine; w < o.workers; ++w)
    ids.push_back(w);
  nlohmann::json out{{"workers", ids}, {"attack", o.attack}};
  switch (a.kind) {
  case optim::attack_kind::sign_flip:
    out["scale"] = a.scale;
    break;
  case optim::attack_kind::ipm:
    out["eps"] = a.scale;
    out["scout_batches"] = a.scout_batches;
    break;
  case optim::attack_kind::gaussian:
    out["sigma"] = a.sigma;
    break;
  case optim::attack_kind::alie:
    out["z"] = optim::alie_z(a.workers, a.byzantine);
    out["z_formula"] = "Phi^-1((n - s) / n), s = floor(n / 2 + 1) - f";
    out["scout_batches"] = a.scout_batches;
    break;
  default:
    break;
  }
  return out;
}

} // namespace troupe::apps
