// The final JSON of a job, assembled from the coordinator's state and the
// workers' and shards' reports.

#include <algorithm>
#include <cmath>

#include "actors/coordinator.hpp"
#include "actors/roles.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

/// Where the roles ran, and the roles that were lost on the way.
void add_placement(const coordinator_state& st, nlohmann::json& out) {
  const auto& plan = st.config.placement;
  if (!plan.empty()) {
    auto nodes = nlohmann::json::array();
    for (std::size_t n = 0; n < plan.node_names.size(); ++n) {
      auto ws = nlohmann::json::array(), ss = nlohmann::json::array();
      for (std::size_t w = 0; w < plan.worker_node.size(); ++w)
        if (plan.worker_node[w] == static_cast<std::int32_t>(n))
          ws.push_back(w);
      for (std::size_t i = 0; i < plan.shard_node.size(); ++i)
        if (plan.shard_node[i] == static_cast<std::int32_t>(n))
          ss.push_back(i);
      nodes.push_back(
          {{"name", plan.node_names[n]}, {"workers", ws}, {"shards", ss}});
    }
    out["nodes"] = nodes;
  }
  auto failures = nlohmann::json::array();
  auto lost = nlohmann::json::array();
  std::uint64_t lost_steps = 0;
  for (const auto& f : st.failures) {
    failures.push_back({{"role", f.role},
                        {"index", f.index},
                        {"node", f.node},
                        {"reason", f.reason},
                        {"seconds", f.seconds},
                        {"unix_ms", f.unix_ms},
                        {"steps_done", f.steps_done},
                        {"steps_reassigned_each", f.steps_reassigned},
                        {"reassigned_to", f.reassigned_to}});
    lost_steps += f.steps_done;
    if (std::find(lost.begin(), lost.end(), f.node) == lost.end())
      lost.push_back(f.node);
  }
  out["failures"] = failures;
  out["lost_nodes"] = lost;
  out["lost_worker_steps"] = lost_steps;
}

/// The ledger's keys of the final JSON.
void add_ledger(const coordinator_state& st, nlohmann::json& out) {
  auto l = ledger_of(st);
  out["steps_planned"] = l.planned;
  out["steps_done"] = l.done;
  out["steps_lost"] = l.lost;
  out["step_ledger"] = {{"planned", l.planned},
                        {"done", l.done},
                        {"done_by_lost_workers", l.done_by_lost_workers},
                        {"reassigned", l.reassigned},
                        {"lost", l.lost},
                        {"unassigned", l.unassigned},
                        {"not_taken", l.not_taken}};
}

} // namespace

step_ledger ledger_of(const coordinator_state& st) {
  step_ledger l;
  l.planned = st.config.steps_per_worker * st.config.workers;
  l.unassigned = st.steps_unassigned;
  l.reassigned = st.steps_reassigned;
  for (std::size_t w = 0; w < st.config.workers; ++w) {
    // An invalid job or a failed placement never assigned its steps.
    auto quota = w < st.quota.size() ? st.quota[w] : st.config.steps_per_worker;
    auto f = std::find_if(st.failures.begin(), st.failures.end(),
                          [&](const failure_record& x) {
                            return x.role == "worker" && x.index == w;
                          });
    auto r = std::find_if(st.worker_reports.begin(), st.worker_reports.end(),
                          [&](const worker_stats& x) { return x.worker == w; });
    std::uint64_t done = 0;
    if (f != st.failures.end()) {
      done = f->steps_done;
      l.done_by_lost_workers += done;
    } else if (r != st.worker_reports.end()) {
      done = r->steps;
    } else {
      // It never reported: as far as counted.
      done = w < st.worker_steps.size() ? st.worker_steps[w] : 0;
    }
    l.done += done;
    if (quota > done)
      l.not_taken += quota - done;
  }
  l.lost = l.unassigned + l.not_taken;
  return l;
}

nlohmann::json job_report(const coordinator_state& st, const eval_msg* ep) {
  // No evaluation behind the figures (none ran, or no test set): null.
  bool has_eval = ep != nullptr && static_cast<bool>(st.config.evaluate);
  eval_msg none;
  const auto& e = ep ? *ep : none;
  std::uint64_t messages = 0, bytes = 0, applied = 0, staleness_sum = 0;
  std::uint64_t staleness_max = 0, max_gap = 0, duplicates = 0;
  std::vector<std::uint64_t> hist;
  auto rejected = nlohmann::json::array();
  auto shards = nlohmann::json::array();
  for (const auto& s : st.shard_reports) {
    messages += s.messages;
    bytes += s.bytes;
    applied += s.version;
    staleness_sum += s.staleness_sum;
    staleness_max = std::max(staleness_max, s.staleness_max);
    max_gap = std::max(max_gap, s.max_clock_gap);
    if (hist.size() < s.staleness_histogram.size())
      hist.resize(s.staleness_histogram.size(), 0);
    for (std::size_t i = 0; i < s.staleness_histogram.size(); ++i)
      hist[i] += s.staleness_histogram[i];
    for (const auto& w : s.workers) {
      duplicates += w.duplicates;
      if (w.non_finite > 0)
        rejected.push_back({{"worker", w.worker},
                            {"shard", s.shard},
                            {"reason", "non_finite"},
                            {"count", w.non_finite}});
      if (w.bad_range > 0)
        rejected.push_back({{"worker", w.worker},
                            {"shard", s.shard},
                            {"reason", "bad_range"},
                            {"count", w.bad_range}});
    }
    shards.push_back({{"shard", s.shard},
                      {"offset", s.offset},
                      {"size", s.size},
                      {"version", s.version}});
  }
  // Trim the histogram's empty tail.
  while (!hist.empty() && hist.back() == 0)
    hist.pop_back();
  std::uint64_t steps = 0, samples = 0;
  auto workers = nlohmann::json::array();
  auto reports = st.worker_reports;
  std::sort(reports.begin(), reports.end(),
            [](auto& x, auto& y) { return x.worker < y.worker; });
  for (const auto& w : reports) {
    messages += w.messages;
    bytes += w.bytes;
    steps += w.steps;
    samples += w.samples;
    nlohmann::json j{{"worker", w.worker},
                     {"steps", w.steps},
                     {"samples", w.samples},
                     {"messages", w.messages},
                     {"bytes", w.bytes},
                     {"compute_seconds", w.compute_ns * 1e-9},
                     {"wait_seconds", w.wait_ns * 1e-9}};
    if (is_peer_to_peer(st.config) || st.config.algo == "shadow") {
      j["mixes"] = w.mixes;
      j["timeouts"] = w.timeouts;
    }
    if (st.config.algo == "sgp")
      j["weight"] = w.weight.value;
    if (st.config.algo == "lsgd") {
      j["pulls"] = w.pulls;
      j["mean_pull_distance"]
          = w.pulls > 0 ? w.pull_distance.value / w.pulls : 0.0;
    }
    workers.push_back(std::move(j));
  }
  nlohmann::json leaders;
  if (st.leaders) {
    leaders = st.leaders->to_json();
    messages += leaders.value("messages", std::uint64_t{0});
    bytes += leaders.value("bytes", std::uint64_t{0});
  }
  std::uint64_t sync_rounds = 0;
  double gap_sum = 0;
  for (auto& r : st.syncer_reports) {
    messages += r.value("messages", std::uint64_t{0});
    bytes += r.value("bytes", std::uint64_t{0});
    sync_rounds += r.value("rounds", std::uint64_t{0});
    gap_sum += r.value("sync_gap", 0.0);
  }
  auto seconds = st.train_end;
  nlohmann::json out{
      {"algo", st.config.algo},
      {"server_optimizer", st.config.server.optimizer.name},
      {"workers", st.config.workers},
      {"shards", st.config.shards},
      {"parameters", st.config.init->size()},
      {"test_accuracy",
       has_eval ? nlohmann::json(e.accuracy.value) : nlohmann::json(nullptr)},
      {"test_loss",
       has_eval ? nlohmann::json(e.loss.value) : nlohmann::json(nullptr)},
      {"train_loss", st.last_loss},
      {"reached_target", st.reached},
      {"seconds_to_target", st.seconds_to_target
                                ? nlohmann::json(*st.seconds_to_target)
                                : nlohmann::json(nullptr)},
      {"seconds", seconds},
      {"stop_reason", st.stop_reason},
      {"steps", steps},
      {"steps_per_worker", st.config.steps_per_worker},
      {"samples", samples},
      {"samples_per_sec", seconds > 0 ? samples / seconds : 0.0},
      {"messages", messages},
      {"bytes_sent", bytes},
      {"messages_per_sample",
       samples > 0 ? static_cast<double>(messages) / samples : 0.0},
      {"bytes_per_sample",
       samples > 0 ? static_cast<double>(bytes) / samples : 0.0},
      {"server_updates", applied},
      {"staleness_mean",
       applied > 0 ? static_cast<double>(staleness_sum) / applied : 0.0},
      {"staleness_max", staleness_max},
      {"staleness_histogram", hist},
      {"duplicate_pushes", duplicates},
      {"rejected_pushes", rejected},
      {"param_hash", e.param_hash},
      {"evaluations", st.evaluations},
      {"worker_stats", workers},
      {"shard_stats", shards},
  };
  if (st.config.algo == "easgd") {
    out["easgd"] = {{"tau", st.config.easgd.tau},
                    {"alpha", easgd_alpha(st.config)},
                    {"momentum", st.config.easgd.momentum},
                    {"lr", st.config.easgd.lr}};
  }
  if (st.leaders) {
    const auto& l = st.config.lsgd;
    out["lsgd"] = {{"lambda", l.lambda},
                   {"lambda_g", l.lambda_g},
                   {"tau", l.tau},
                   {"tau_g", l.tau_g},
                   {"score_window", l.score_window},
                   {"optimizer", st.config.local_optimizer.name},
                   {"lr", st.config.local_lr}};
    out["leader_changes"] = st.leaders->changes();
    out["leaders"] = std::move(leaders);
  }
  if (st.config.algo == "sgp" || st.config.algo == "dssync") {
    const auto& p = st.config.peer;
    out[st.config.algo] = {{"optimizer", st.config.local_optimizer.name},
                           {"lr", st.config.local_lr},
                           {"evaluated", "mean of the workers' models"}};
    if (st.config.algo == "sgp") {
      out["sgp"]["peers"] = p.peers;
      out["sgp"]["overlap"] = p.overlap;
      double w = 0;
      for (auto& r : reports)
        w += std::isfinite(r.weight.value) ? r.weight.value : 0.0;
      out["sgp"]["weight_sum"] = w;
    } else {
      out["dssync"]["group_size"] = p.group_size;
      auto q = p;
      q.workers = st.config.workers;
      out["dssync"]["schedule"]
          = digit_schedule(q)
                ? "digit"
                : (q.group_size >= q.workers ? "one group" : "random");
    }
  }
  if (st.config.algo == "shadow") {
    const auto& o = st.config.shadow;
    nlohmann::json j{
        {"mode", o.mode},
        {"syncers", st.syncer_reports},
        {"rounds", sync_rounds},
        {"sync_gap",
         st.syncer_reports.empty()
             ? 0.0
             : gap_sum / static_cast<double>(st.syncer_reports.size())},
        {"period_ms", o.period.count()},
        {"optimizer", st.config.local_optimizer.name},
        {"lr", st.config.local_lr}};
    if (o.mode == "easgd")
      j["alpha"] = shadow_alpha(o, st.config.workers);
    if (o.mode == "bmuf") {
      j["block_momentum"] = shadow_block_momentum(o, st.config.workers);
      j["block_lr"] = o.block_lr;
    }
    out["shadow"] = std::move(j);
  }
  const auto& cz = st.config.algo == "sgp" ? st.config.peer.compress
                                           : st.config.policy.compress;
  if (cz.method != optim::codec::none) {
    std::uint64_t d[2] = {0, 0}, p[2] = {0, 0};
    double residual = 0;
    for (auto& w : reports) {
      d[0] += w.dense_fc, d[1] += w.dense_conv;
      p[0] += w.packed_fc, p[1] += w.packed_conv;
      residual += w.residual_norm.value;
    }
    auto r = [](std::uint64_t dense, std::uint64_t packed) {
      return packed > 0 ? nlohmann::json(static_cast<double>(dense) / packed)
                        : nlohmann::json(nullptr);
    };
    out["compression"] = {{"method", optim::to_string(cz.method)},
                          {"bin_fc", cz.bin_fc},
                          {"bin_conv", cz.bin_conv},
                          {"density_fc", cz.density_fc},
                          {"density_conv", cz.density_conv}};
    if (st.config.algo == "sgp")
      out["compression"]["gossip_gamma"] = st.config.peer.gamma;
    out["compression_ratio"] = {{"overall", r(d[0] + d[1], p[0] + p[1])},
                                {"fc", r(d[0], p[0])},
                                {"conv", r(d[1], p[1])}};
    out["compressed_bytes"] = {{"fc", p[0]}, {"conv", p[1]}};
    out["residual_norm"] = reports.empty()
                               ? 0.0
                               : residual / static_cast<double>(reports.size());
  }
  if (st.config.staleness_bound) {
    out["staleness_bound"] = *st.config.staleness_bound;
    out["max_clock_gap"] = max_gap;
  }
  add_placement(st, out);
  add_ledger(st, out);
  if (!st.warning.empty())
    out["warning"] = st.warning;
  if (!st.error.empty())
    out["error"] = st.error;
  return out;
}

} // namespace troupe::actors
