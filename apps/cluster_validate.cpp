// The checks of troupe train's cluster flags: every flag that does not fit
// the algorithm is refused by name, before anything starts.

#include <string>

#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"
#include "apps/lbfgs_train.hpp"
#include "optim/compress.hpp"
#include "optim/optimizer.hpp"

namespace troupe::apps {

void validate_cluster(const train_options& o) {
  auto fail = [&](const std::string& what) {
    throw usage_error("troupe train: --algo=" + o.algo + ": " + what);
  };
  if (o.workers < 1 || o.workers > 4096)
    fail("--workers must be in [1, 4096]");
  if (o.shards < 1 || o.shards > 1024)
    fail("--shards must be in [1, 1024]");
  bool consensus = o.algo == "easgd" || o.algo == "lsgd";
  bool decentral = is_decentral_algo(o.algo);
  bool shadow_easgd = o.algo == "shadow" && o.shadow == "easgd";
  if (!consensus
      && (o.tau != 4 || (o.alpha != 0 && !shadow_easgd) || o.easgd_momentum != 0
          || (o.groups != 0 && o.algo != "shadow") || o.lambda != 0.1
          || o.lambda_g != 0.1 || o.tau_g != 16 || o.score_window != 0))
    fail("--tau, --alpha, --easgd-momentum, --groups, --lambda, --lambda-g, "
         "--tau-g and --score-window apply to easgd and lsgd (--alpha also "
         "to shadow --shadow=easgd, --groups to shadow)");
  if ((o.peers != 1 && o.algo != "sgp") || (o.overlap != 0 && o.algo != "sgp"))
    fail("--peers and --overlap apply to sgp");
  if (o.group_size != 2 && o.algo != "dssync")
    fail("--group-size applies to dssync");
  if (o.algo != "shadow"
      && (o.shadow != "ma" || o.shadow_period != 0 || o.block_momentum != -1
          || o.block_lr != 1))
    fail("--shadow, --shadow-period, --block-momentum and --block-lr apply "
         "to shadow");
  if (consensus || decentral) {
    if (o.n_fetch != 1 || o.n_push != 1 || o.staleness_bound >= 0
        || o.staleness_aware || o.warm_start_steps > 0
        || !o.server_optimizer.empty() || o.local_lr >= 0)
      fail("--n-fetch, --n-push, --staleness-bound, --staleness-aware, "
           "--warm-start-steps, --server-optimizer and --local-lr apply to "
           "downpour and sync");
  }
  if (decentral) {
    if (o.shards != 1 && !shadow_easgd)
      fail(o.algo + (o.algo == "shadow" ? " --shadow=" + o.shadow : "")
           + " has no parameter shards; leave --shards out");
    if (o.groups > o.workers)
      fail("--groups must be at most --workers");
  }
  if (o.algo == "sgp" && o.peers != 1 && o.peers != 2)
    fail("--peers must be 1 or 2");
  if (o.algo == "sgp" && o.overlap > 1000000)
    fail("--overlap must be at most 1000000");
  if (o.algo == "dssync" && (o.group_size < 2 || o.group_size > 4096))
    fail("--group-size must be in [2, 4096]");
  if (o.algo == "shadow") {
    if (o.shadow != "easgd" && o.shadow != "ma" && o.shadow != "bmuf")
      fail("--shadow must be easgd, ma or bmuf");
    if (!(o.alpha >= 0 && o.alpha < 1))
      fail("--alpha must be in [0, 1) (0: 0.9 / workers)");
    if (!(o.shadow_period >= 0 && o.shadow_period <= 3600))
      fail("--shadow-period must be in [0, 3600] seconds");
    if (o.shadow != "bmuf" && (o.block_momentum != -1 || o.block_lr != 1))
      fail("--block-momentum and --block-lr apply to --shadow=bmuf");
    if (o.block_momentum != -1
        && !(o.block_momentum >= 0 && o.block_momentum < 1))
      fail("--block-momentum must be in [0, 1)");
    if (!(o.block_lr > 0 && o.block_lr <= 10))
      fail("--block-lr must be in (0, 10]");
  }
  if (consensus) {
    if (o.tau < 1 || o.tau > 1000000)
      fail("--tau must be in [1, 1000000]");
  }
  if (o.algo == "easgd") {
    if (!(o.alpha >= 0 && o.alpha < 1))
      fail("--alpha must be in [0, 1) (0: 0.9 / workers)");
    if (o.alpha * static_cast<double>(o.workers) >= 1)
      fail("--alpha times --workers (the center's rate beta) must be below "
           "1, or the center overshoots");
    if (!(o.easgd_momentum >= 0 && o.easgd_momentum < 1))
      fail("--easgd-momentum must be in [0, 1)");
    if (o.groups != 0 || o.lambda != 0.1 || o.lambda_g != 0.1 || o.tau_g != 16
        || o.score_window != 0)
      fail("--groups, --lambda, --lambda-g, --tau-g and --score-window apply "
           "to lsgd");
  }
  if (o.algo == "lsgd") {
    if (o.shards != 1)
      fail("lsgd has no parameter shards; leave --shards out");
    if (o.alpha != 0 || o.easgd_momentum != 0)
      fail("--alpha and --easgd-momentum apply to easgd");
    if (o.groups > o.workers)
      fail("--groups must be at most --workers");
    if (!(o.lambda >= 0 && o.lambda <= 1)
        || !(o.lambda_g >= 0 && o.lambda_g <= 1))
      fail("--lambda and --lambda-g must be in [0, 1]");
    if (o.tau_g < o.tau)
      fail("--tau-g must be at least --tau");
    if (o.score_window > 100000)
      fail("--score-window must be at most 100000");
  }
  if (o.compress != "none" && o.algo != "downpour" && o.algo != "sync"
      && o.algo != "sgp")
    fail("--compress applies to downpour and sync (their gradient pushes) "
         "and sgp (its shares)");
  try {
    auto method = optim::parse_codec(o.compress);
    if ((o.bin_fc != 500 || o.bin_conv != 50)
        && method != optim::codec::adacomp)
      fail("--bin-fc and --bin-conv apply to --compress=adacomp");
    if ((o.topk_fc != 0.01 || o.topk_conv != 0.01)
        && method != optim::codec::topk)
      fail("--topk-fc and --topk-conv apply to --compress=topk");
  } catch (const std::invalid_argument& e) {
    fail(std::string{"--compress: "} + e.what());
  }
  if (o.gossip_gamma != 0.5 && (o.algo != "sgp" || o.compress == "none"))
    fail("--gossip-gamma applies to sgp with --compress");
  if (!(o.gossip_gamma > 0 && o.gossip_gamma <= 1))
    fail("--gossip-gamma must be in (0, 1]");
  if (o.bin_fc < 1 || o.bin_fc > 1000000 || o.bin_conv < 1
      || o.bin_conv > 1000000)
    fail("--bin-fc and --bin-conv must be in [1, 1000000]");
  if (!(o.topk_fc > 0 && o.topk_fc <= 1)
      || !(o.topk_conv > 0 && o.topk_conv <= 1))
    fail("--topk-fc and --topk-conv must be in (0, 1]");
  if (o.n_fetch < 1 || o.n_push < 1)
    fail("--n-fetch and --n-push must be at least 1");
  if (o.staleness_bound < -1)
    fail("--staleness-bound must be -1 (none) or at least 0");
  if (!(o.request_timeout > 0))
    fail("--request-timeout must be positive");
  if (!o.server_optimizer.empty()) {
    optim::optimizer_options opt;
    opt.name = o.server_optimizer;
    try {
      optim::make_optimizer<float>(opt, 1);
    } catch (const std::invalid_argument& e) {
      fail(std::string{"--server-optimizer: "} + e.what());
    }
  }
  if (o.algo == "sync") {
    if (o.n_fetch != 1 || o.n_push != 1)
      fail("sync exchanges every step; --n-fetch and --n-push must be 1");
    if (o.staleness_bound >= 0 || o.warm_start_steps > 0 || o.staleness_aware)
      fail("--staleness-bound, --staleness-aware and --warm-start-steps "
           "apply to downpour");
  }
  if (o.staleness_bound >= 0 && (o.n_push != 1 || o.n_fetch != 1))
    fail("under --staleness-bound a worker's clock advances with every "
         "push and fetch; --n-fetch and --n-push must be 1");
  if (o.algo == "lbfgs")
    validate_lbfgs(o);
  else if (o.portions != 0 || o.memory != 10 || o.gradient_tolerance != 1e-6
           || !o.backups)
    fail("--portions, --memory, --gradient-tolerance and --backups apply to "
         "lbfgs");
}

} // namespace troupe::apps
