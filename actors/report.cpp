// The final JSON of a job, assembled from the coordinator's state and the
// workers' and shards' reports.

#include <algorithm>
#include <cmath>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"
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
  // Workers of nodes that joined the running job have ids past the job's.
  auto ids = std::max<std::size_t>(st.config.workers, st.quota.size());
  for (std::size_t w = 0; w < ids; ++w) {
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
  // Ceded to a joining node not yet placed when the job ended.
  l.not_taken += st.join_steps_pending;
  l.lost = l.unassigned + l.not_taken;
  return l;
}

namespace {

/// Stands in for a missing algorithm in the report of an invalid job.
class no_algorithm final : public algorithm {
public:
  std::string name() const override {
    return "none";
  }
  shard_plan plan(const job_config&) const override {
    return shard_plan::none;
  }
  void configure_worker(const job_config&, worker_config&,
                        std::vector<shard_ref>) const override {
    // never runs
  }
};

} // namespace

nlohmann::json job_report(const coordinator_state& st, const eval_msg* ep) {
  static const no_algorithm missing;
  const auto& algo = st.config.algorithm ? *st.config.algorithm : missing;
  // No evaluation behind the figures (none ran, or no test set): null.
  bool has_eval = ep != nullptr && static_cast<bool>(st.config.evaluate);
  eval_msg none;
  const auto& e = ep ? *ep : none;
  std::uint64_t messages = 0, bytes = 0, applied = 0, staleness_sum = 0;
  std::uint64_t staleness_max = 0, duplicates = 0;
  std::vector<std::uint64_t> hist;
  auto rejected = nlohmann::json::array();
  auto shards = nlohmann::json::array();
  for (const auto& s : st.shard_reports) {
    messages += s.messages;
    bytes += s.bytes;
    applied += s.version;
    staleness_sum += s.staleness_sum;
    staleness_max = std::max(staleness_max, s.staleness_max);
    if (hist.size() < s.staleness_histogram.size())
      hist.resize(s.staleness_histogram.size(), 0);
    for (std::size_t i = 0; i < s.staleness_histogram.size(); ++i)
      hist[i] += s.staleness_histogram[i];
    std::uint64_t shard_rejected = 0, shard_duplicates = 0, shard_applied = 0;
    std::uint64_t shard_discarded = 0;
    for (const auto& w : s.workers) {
      shard_applied += w.applied;
      duplicates += w.duplicates;
      shard_duplicates += w.duplicates;
      shard_rejected += w.non_finite + w.bad_range;
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
      shard_discarded += w.discarded;
      if (w.discarded > 0)
        rejected.push_back({{"worker", w.worker},
                            {"shard", s.shard},
                            {"reason", "discarded_by_rule"},
                            {"count", w.discarded}});
    }
    shards.push_back({{"shard", s.shard},
                      {"offset", s.offset},
                      {"size", s.size},
                      {"version", s.version},
                      {"applied", shard_applied},
                      {"rejected", shard_rejected},
                      {"discarded_by_rule", shard_discarded},
                      {"duplicates", shard_duplicates}});
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
    if (!st.shards.empty())
      j["pushes"] = w.pushes; // sent to the shards (each to every shard)
    algo.report_worker(w, j);
    workers.push_back(std::move(j));
  }
  nlohmann::json run_figures = nlohmann::json::object();
  if (st.run)
    st.run->report(st, run_figures, messages, bytes);
  auto seconds = st.train_end;
  nlohmann::json out{
      {"algo", algo.name()},
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
  out.update(run_figures);
  static const optim::compress_options uncompressed;
  const auto* compression = algo.compression(st.config);
  const auto& cz = compression ? *compression : uncompressed;
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
    out["compression_ratio"] = {{"overall", r(d[0] + d[1], p[0] + p[1])},
                                {"fc", r(d[0], p[0])},
                                {"conv", r(d[1], p[1])}};
    out["compressed_bytes"] = {{"fc", p[0]}, {"conv", p[1]}};
    out["residual_norm"] = reports.empty()
                               ? 0.0
                               : residual / static_cast<double>(reports.size());
  }
  algo.report(st, out); // after the compression block, which it may extend
  add_placement(st, out);
  add_ledger(st, out);
  if (st.config.shard_replicas > 0 && !st.shards.empty())
    out["replicas"] = detail::replicas_report(st);
  if (!st.joined.empty())
    out["joined"] = detail::joined_report(st);
  if (!st.restored.empty())
    out["restored_shards"]
        = detail::restored_report(st, st.shard_reports, st.worker_reports);
  if (!st.warning.empty())
    out["warning"] = st.warning;
  if (!st.error.empty())
    out["error"] = st.error;
  if (st.config.checkpoints.write)
    out["checkpoints"] = st.checkpoint_log;
  if (st.config.resume)
    out["resumed_from"]
        = {{"path", st.config.resume->path},
           {"steps", st.config.resume->progress.value("total_steps", 0)}};
  return out;
}

} // namespace troupe::actors
