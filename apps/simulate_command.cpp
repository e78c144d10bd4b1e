// troupe simulate: troupe train's job on a simulated cluster.

#include "apps/simulate_command.hpp"

#include <cmath>
#include <iostream>
#include <sstream>
#include <string>

#include "actors/detail/log.hpp"
#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"
#include "apps/simulate_compare.hpp"
#include "apps/simulate_compute.hpp"
#include "apps/train_command.hpp"
#include "optim/quote.hpp"
#include "optim/rng.hpp"
#include "sim/run.hpp"

namespace troupe::apps {

namespace {

/// The cluster's flags as given.
struct sim_flags {
  double link_gbps = 10;
  double latency_us = 5;
  std::uint64_t rack_size = 0;
  double oversubscription = 1;
  double sample_seconds = 0;
  double value_seconds = 0;
  double node_gflops = 25;
  double serialize_gbps = 0;
  std::uint64_t host_cores = 0;
  std::string core_sharing = "fifo";
  std::uint64_t node_threads = 0;
  bool reply_copy = false;
  double first_touch_gbps = 0;
  bool shared_memory = false;
  double shm_share = 0.5;
  bool calibrate = false;
  std::string virtual_params; ///< D
  std::string stragglers;     ///< P:F
  double jitter = 0;
  double eval_seconds = -1;      ///< S (< 0: forward passes)
  std::uint64_t timing_seed = 0; ///< 0: the job's --seed
  std::string slow_nodes;        ///< K:F
  std::string shard_nodes = "own";
  std::string crash; ///< ROLE:I@SECONDS,...
  std::uint64_t max_events = 0;
  double wall_seconds = 3600;
};

void add_sim_flags(option_parser& p, sim_flags& f) {
  p.add(f.link_gbps, "link-gbps", "each node's link rate in Gb/s");
  p.add(f.latency_us, "latency-us",
        "latency per switch in microseconds (1 switch in a rack, 3 across)");
  p.add(f.rack_size, "rack-size", "nodes per rack (0: one rack)");
  p.add(f.oversubscription, "oversubscription",
        "a rack's link rates over its uplink to the core (1: none)");
  p.add(f.sample_seconds, "sample-seconds",
        "seconds one sample's step takes on a node (0: from --node-gflops)");
  p.add(f.value_seconds, "value-seconds",
        "seconds a shard takes to update one value (0: from --node-gflops)");
  p.add(f.node_gflops, "node-gflops",
        "a node's speed for the model's estimated work, in GFLOP/s");
  p.add(f.serialize_gbps, "serialize-gbps",
        "CPU cost of a message between nodes: its bytes at this rate busy "
        "its sender and its receiver's node (0: free)");
  p.add(f.host_cores, "host-cores",
        "all nodes share one host of this many cores (0: a node has its "
        "own)");
  p.add(f.core_sharing, "core-sharing",
        "with --host-cores: fifo (work waits for a free core) | fair "
        "(all work shares the cores, as the kernel's scheduler does)");
  p.add(f.node_threads, "node-threads",
        "actor threads a node has (0: one an actor; fifo sharing only): "
        "a handler waits for one of its node's threads");
  p.add(f.reply_copy, "reply-copy",
        "with --host-shm: a fetch reply's sender copies its values into "
        "the segment in its handler, not its node's broker");
  p.add(f.first_touch_gbps, "first-touch-gbps",
        "with --host-shm: the first 64 MiB into each segment fault in "
        "fresh pages at this rate, on top of the copy (0: free)");
  p.add(f.shared_memory, "host-shm",
        "pushes and fetch replies go through shared memory (one host): "
        "their values cost --serialize-gbps, not the links");
  p.add(f.shm_share, "shm-share",
        "with --host-shm: a message's CPU cost through shared memory as a "
        "share of its cost through the socket (default 0.5: one copy of "
        "two)");
  p.add(f.calibrate, "calibrate",
        "time real steps and an evaluation here (--sample-seconds, "
        "--eval-seconds; not repeatable)");
  p.add(f.virtual_params, "virtual-params",
        "D: bytes and compute as if the model had D parameters (tensor "
        "payloads x D/d, d its own; at least d, at most 10^12)");
  p.add(f.stragglers, "stragglers",
        "P:F: each step is F times slower with probability P");
  p.add(f.jitter, "jitter",
        "CV: each step takes a random factor of mean 1 and this "
        "coefficient of variation (0: none, at most 4)");
  p.add(f.eval_seconds, "eval-seconds",
        "S: an evaluation takes S seconds (< 0, the default: a forward pass "
        "per test sample on the coordinator's node)");
  p.add(f.timing_seed, "timing-seed",
        "seed of the stragglers' and the jitter's draws (0: --seed): the "
        "same job under other timing");
  p.add(f.slow_nodes, "slow-nodes", "K:F: K worker nodes are F times slower");
  p.add(f.shard_nodes, "shard-nodes",
        "own (a node per shard) | workers (on the workers' nodes) | "
        "coordinator (on its node, as troupe launch --local places them)");
  p.add(f.crash, "crash",
        "ROLE:I@S,...: the node of worker:I, shard:I or node:I crashes at "
        "S simulated seconds");
  p.add(f.max_events, "max-events", "stop after this many events (0: none)");
  p.add(f.wall_seconds, "wall-seconds", "stop after this many real seconds");
  p.section(
      "the simulated cluster",
      {"link-gbps",        "latency-us",    "rack-size",    "oversubscription",
       "sample-seconds",   "value-seconds", "node-gflops",  "serialize-gbps",
       "host-cores",       "core-sharing",  "node-threads", "reply-copy",
       "first-touch-gbps", "host-shm",      "shm-share",    "calibrate",
       "virtual-params",   "stragglers",    "jitter",       "timing-seed",
       "eval-seconds",     "slow-nodes",    "shard-nodes",  "crash",
       "max-events",       "wall-seconds"});
}

/// "P:F" into its two numbers; throws usage_error naming `flag`.
std::pair<double, double> pair_of(const std::string& text, const char* flag,
                                  const char* what) {
  auto colon = text.find(':');
  double a = 0, b = 0;
  std::size_t used_a = 0, used_b = 0;
  try {
    if (colon == std::string::npos)
      throw std::invalid_argument("no colon");
    a = std::stod(text.substr(0, colon), &used_a);
    b = std::stod(text.substr(colon + 1), &used_b);
  } catch (const std::exception&) {
    used_a = 0;
  }
  if (used_a == 0 || used_a != colon || colon + 1 + used_b != text.size()
      || !std::isfinite(a) || !std::isfinite(b))
    throw usage_error(std::string{"troupe simulate: --"} + flag + "=" + text
                      + " is not " + what);
  return {a, b};
}

/// --crash=ROLE:I@S,... (checked against the job's worker count).
std::vector<sim::crash_spec> crashes_of(const std::string& text,
                                        const train_options& o) {
  std::vector<sim::crash_spec> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find(',', at);
    if (end == std::string::npos)
      end = text.size();
    auto item = text.substr(at, end - at);
    at = end + 1;
    auto bad = [&](const std::string& why) {
      return usage_error("troupe simulate: --crash=" + optim::quote(item) + ": "
                         + why);
    };
    auto colon = item.find(':'), sign = item.find('@');
    if (colon == std::string::npos || sign == std::string::npos || sign < colon)
      throw bad("not ROLE:I@SECONDS (e.g. worker:3@0.5)");
    sim::crash_spec c;
    c.role = item.substr(0, colon);
    if (c.role != "worker" && c.role != "shard" && c.role != "node")
      throw bad("the role must be worker, shard or node");
    std::size_t used = 0;
    double index = -1;
    try {
      auto digits = item.substr(colon + 1, sign - colon - 1);
      index = std::stod(digits, &used);
      if (used != digits.size())
        index = -1;
      auto when = item.substr(sign + 1);
      c.seconds = std::stod(when, &used);
      if (used != when.size())
        c.seconds = -1;
    } catch (const std::exception&) {
      throw bad("not ROLE:I@SECONDS (e.g. worker:3@0.5)");
    }
    if (index < 0 || index != std::floor(index) || index > 1e7)
      throw bad("the index must be a count from 0");
    c.index = static_cast<std::uint32_t>(index);
    if (c.role == "worker" && c.index >= o.workers)
      throw bad("there are " + std::to_string(o.workers) + " workers");
    if (!std::isfinite(c.seconds) || c.seconds < 0 || c.seconds > 1e9)
      throw bad("the time must be seconds from 0");
    out.push_back(std::move(c));
  }
  return out;
}

sim::sim_options to_options(const sim_flags& f, const train_options& o) {
  sim::sim_options so;
  so.network.gbps = f.link_gbps;
  so.network.latency_us = f.latency_us;
  so.network.rack_size = static_cast<std::uint32_t>(f.rack_size);
  so.network.oversubscription = f.oversubscription;
  try {
    sim::validate(so.network);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string{"troupe simulate: "} + e.what());
  }
  if (f.rack_size > 1'000'000)
    throw usage_error("troupe simulate: --rack-size must be at most 10^6");
  if (!std::isfinite(f.sample_seconds) || f.sample_seconds < 0
      || f.sample_seconds > 3600)
    throw usage_error("troupe simulate: --sample-seconds must be in [0, "
                      "3600]");
  if (!std::isfinite(f.node_gflops) || f.node_gflops <= 0
      || f.node_gflops > 1e9)
    throw usage_error("troupe simulate: --node-gflops must be in (0, 1e9]");
  if (!std::isfinite(f.value_seconds) || f.value_seconds < 0
      || f.value_seconds > 1)
    throw usage_error("troupe simulate: --value-seconds must be in [0, 1]");
  if (!std::isfinite(f.serialize_gbps) || f.serialize_gbps < 0
      || f.serialize_gbps > 1e6)
    throw usage_error("troupe simulate: --serialize-gbps must be in [0, "
                      "1e6]");
  if (f.host_cores > 4096)
    throw usage_error("troupe simulate: --host-cores must be at most 4096");
  so.compute.sample_seconds = f.sample_seconds;
  so.compute.value_seconds = f.value_seconds;
  so.compute.serialize_gbps = f.serialize_gbps;
  so.compute.host_cores = static_cast<std::uint32_t>(f.host_cores);
  if (f.core_sharing != "fifo" && f.core_sharing != "fair")
    throw usage_error("troupe simulate: --core-sharing must be fifo or fair, "
                      "not '"
                      + f.core_sharing + "'");
  so.compute.fair_share = f.core_sharing == "fair";
  if (f.node_threads > 4096)
    throw usage_error("troupe simulate: --node-threads must be at most 4096");
  if (f.node_threads > 0 && so.compute.fair_share)
    throw usage_error("troupe simulate: --node-threads needs "
                      "--core-sharing=fifo");
  so.compute.node_threads = static_cast<std::uint32_t>(f.node_threads);
  so.compute.reply_copy_in_handler = f.reply_copy;
  if (!std::isfinite(f.first_touch_gbps) || f.first_touch_gbps < 0
      || f.first_touch_gbps > 1e6)
    throw usage_error("troupe simulate: --first-touch-gbps must be in [0, "
                      "1e6]");
  so.compute.first_touch_gbps = f.first_touch_gbps;
  so.compute.shared_memory = f.shared_memory;
  if (!std::isfinite(f.shm_share) || f.shm_share < 0 || f.shm_share > 4)
    throw usage_error("troupe simulate: --shm-share must be in [0, 4]");
  so.compute.shm_share = f.shm_share;
  so.compute.seed = f.timing_seed != 0 ? f.timing_seed : o.seed;
  if (!std::isfinite(f.jitter) || f.jitter < 0 || f.jitter > 4)
    throw usage_error("troupe simulate: --jitter must be in [0, 4]");
  so.compute.jitter = f.jitter;
  if (!std::isfinite(f.eval_seconds) || f.eval_seconds > 86400)
    throw usage_error("troupe simulate: --eval-seconds must be at most 86400 "
                      "(< 0: forward passes)");
  so.compute.eval_seconds = f.eval_seconds;
  if (!f.stragglers.empty()) {
    auto [p, x] = pair_of(f.stragglers, "stragglers",
                          "P:F with P in [0, 1] and F >= 1");
    if (p < 0 || p > 1 || x < 1 || x > 1e6)
      throw usage_error("troupe simulate: --stragglers=" + f.stragglers
                        + " is not P:F with P in [0, 1] and F in [1, 1e6]");
    so.compute.straggle_p = p;
    so.compute.straggle_factor = x;
  }
  if (!f.slow_nodes.empty()) {
    auto [k, x]
        = pair_of(f.slow_nodes, "slow-nodes", "K:F with a count K and F >= 1");
    if (k < 0 || k > static_cast<double>(o.workers) || k != std::floor(k)
        || x < 1 || x > 1e6)
      throw usage_error("troupe simulate: --slow-nodes=" + f.slow_nodes
                        + " is not K:F with K in [0, --workers] and F in "
                          "[1, 1e6]");
    // K of the workers' nodes (1..W), drawn with the seed.
    std::vector<std::uint32_t> order(o.workers);
    for (std::uint32_t w = 0; w < o.workers; ++w)
      order[w] = w;
    optim::rng gen{o.seed ^ 0x51ed5u};
    for (std::size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[gen.next() % i]);
    so.compute.slowdown.assign(1 + o.workers, 1.0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(k); ++i)
      so.compute.slowdown[1 + order[i]] = x;
  }
  using place = sim::sim_options::shard_place;
  if (f.shard_nodes == "own")
    so.shards_on = place::own;
  else if (f.shard_nodes == "workers")
    so.shards_on = place::workers;
  else if (f.shard_nodes == "coordinator")
    so.shards_on = place::coordinator;
  else
    throw usage_error("troupe simulate: --shard-nodes must be own, workers "
                      "or coordinator, not "
                      + optim::quote(f.shard_nodes));
  so.crashes = crashes_of(f.crash, o);
  so.max_events = f.max_events;
  if (!std::isfinite(f.wall_seconds) || f.wall_seconds <= 0)
    throw usage_error("troupe simulate: --wall-seconds must be positive");
  so.wall_seconds = f.wall_seconds;
  return so;
}

} // namespace

int simulate_main(const std::vector<std::string>& args) {
  bool compare = false, help = false;
  std::vector<std::string> rest;
  for (const auto& a : args) {
    if (a.rfind("--compare=", 0) == 0 || a == "--compare")
      compare = true;
    else
      rest.push_back(a);
    help = help || a == "--help" || a == "-h";
  }
  if (compare && !help)
    return simulate_compare(args);
  return simulate_with(help ? rest : args, nullptr);
}

int simulate_with(const std::vector<std::string>& args,
                  std::shared_ptr<nlohmann::json> captured) {
  actors::detail::set_log_program("troupe simulate");
  train_options opts;
  sim_flags flags;
  option_parser parser{"troupe simulate"};
  try {
    add_train_options(parser, opts, args);
    add_sim_flags(parser, flags);
    parser.help_footer
        = "\nThe job's flags are troupe train's; each algorithm's own "
          "options:\ntroupe simulate --algo=NAME --help\n"
          "\nSeveral algorithms on one cluster, accuracy over simulated "
          "time side by\nside: troupe simulate --compare=A,B,... "
          "[--report=DIR] (no --algo)\n";
    if (!parser.parse(args))
      return 0;
    opts.given = parser.given();
    opts.program = "troupe simulate";
    opts.max_workers = 1'000'000;
    for (const char* f : {"listen", "expect", "monitor", "monitor-token",
                          "monitor-linger", "port-guard", "tls-cert", "tls-key",
                          "tls-ca", "token", "token-file", "shm"})
      if (opts.given.count(f))
        throw usage_error(std::string{"troupe simulate: --"} + f
                          + " does not apply to a simulated cluster");
    if (opts.algorithm_ref().run_by() != algos::runner::coordinator)
      throw usage_error("troupe simulate: --algo=" + opts.algo
                        + " does not run as actors under a coordinator; "
                          "it cannot be simulated");
  } catch (const usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
  sim::sim_options so;
  compute_flags given;
  try {
    so = to_options(flags, opts);
    given.sample_seconds = flags.sample_seconds;
    given.value_seconds = flags.value_seconds;
    given.node_gflops = flags.node_gflops;
    given.calibrate = flags.calibrate;
    given.virtual_params = virtual_params_of(flags.virtual_params);
  } catch (const usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
  opts.run_placed_job = [so, given, captured](actors::job_config job,
                                              const cluster_job& cj) mutable {
    check_memory(job);
    auto compute = choose_compute(so, given, job, cj);
    auto result = sim::run_simulation(std::move(job), so);
    result["simulation"]["compute"].update(compute);
    if (captured)
      *captured = result;
    return result;
  };
  return train_main_with(std::move(opts), "troupe simulate");
}

} // namespace troupe::apps
