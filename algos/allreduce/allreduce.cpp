#include "algos/allreduce/allreduce.hpp"

#include <algorithm>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/allreduce/allreduce_policy.hpp"
#include "algos/allreduce/sfb_reducer.hpp"
#include "messages/allreduce.hpp"
#include "optim/model_spec.hpp"

namespace troupe::algos {

// -- options ------------------------------------------------------------------

std::string allreduce::summary() const {
  return "synchronous SGD, gradients summed by a ring all-reduce";
}

std::shared_ptr<algorithm> allreduce::clone() const {
  return std::make_shared<allreduce>(*this);
}

void allreduce::bind(caf::config_option_set& set) {
  caf::string_view g = "?allreduce";
  set.add(reduce.kind, g, "reducer",
          "what the ring sums: dense (default) | powersgd (low-rank factors) "
          "| scalecom (a leader's top-k) | sfb (dense layers' sufficient "
          "factors)")
      .add(reduce.rank, g, "powersgd-rank", "PowerSGD's rank (default 4)")
      .add(reduce.density, g, "scalecom-density",
           "ScaleCom's share of the entries a step (default 0.01)")
      .add(reduce.beta, g, "scalecom-beta",
           "ScaleCom's low-pass filter on the memory of what was not sent: "
           "e = (1 - beta) e + beta (m - sent), in (0, 1] (default 1: plain "
           "error feedback)")
      .add(reduce.sfb_layers, g, "sfb-layers",
           "which dense layers SFB factors: auto (Poseidon's choice: where "
           "the factors are fewer values than the matrix; default) | all");
}

void allreduce::check_flags(const job_options&,
                            const std::set<std::string>& given) const {
  check_reducer(reduce);
  if (reduce.kind != "powersgd" && given.count("powersgd-rank"))
    throw std::invalid_argument(
        "--powersgd-rank applies to --reducer=powersgd only");
  if (reduce.kind != "scalecom" && given.count("scalecom-density"))
    throw std::invalid_argument(
        "--scalecom-density applies to --reducer=scalecom only");
  if (reduce.kind != "scalecom" && given.count("scalecom-beta"))
    throw std::invalid_argument(
        "--scalecom-beta applies to --reducer=scalecom only");
  if (reduce.kind != "sfb" && given.count("sfb-layers"))
    throw std::invalid_argument("--sfb-layers applies to --reducer=sfb only");
}

bool allreduce::uses_shards(const job_options&) const {
  return false;
}

data_layout allreduce::layout() const noexcept {
  return data_layout::shared_stream;
}

void allreduce::build(job_build& b) {
  local = local_steps::of(b);
  reduce.layers = b.layers;
  reduce.seed = b.options.seed;
  reduce.batch = b.options.batch;
  if (reduce.kind == "sfb") {
    if (!b.train)
      throw std::invalid_argument("--reducer=sfb: the model's layers are "
                                  "unknown without its training set");
    auto m = optim::build_model<float>(b.options.model, b.train->sample_shape,
                                       b.train->classes);
    reduce.fc = optim::fc_layers(m);
  }
  b.job.shards = 0;
}

std::string allreduce::servers(const actors::job_config&) const {
  return "no shards (a ring)";
}

// -- behavior -----------------------------------------------------------------

std::string allreduce::name() const {
  return "allreduce";
}

actors::shard_plan allreduce::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void allreduce::check(const actors::job_config& job) const {
  local.check("allreduce", false);
  if (job.workers == 0)
    throw std::invalid_argument("allreduce: the job needs a worker");
  if (job.init && job.init->size() < job.workers)
    throw std::invalid_argument(
        "allreduce: a ring of " + std::to_string(job.workers)
        + " workers needs at least as many parameters, the model has "
        + std::to_string(job.init->size()));
}

void allreduce::configure_worker(const actors::job_config& job,
                                 actors::worker_config& config,
                                 std::vector<actors::shard_ref>) const {
  actors::peer_policy_options opts;
  opts.workers = job.workers;
  opts.optimizer = local.optimizer;
  opts.lr = local.lr;
  opts.schedule = local.schedule;
  opts.init = job.init;
  opts.neighbours = peer_ranks(job, config.id);
  config.make_policy
      = [opts, reduce = reduce, rank = config.id](std::size_t params) {
          return make_allreduce_policy(opts, reduce, params, rank);
        };
  config.yield_steps = true;
}

bool allreduce::peer_to_peer() const noexcept {
  return true;
}

std::vector<messages::worker_id>
allreduce::peer_ranks(const actors::job_config& job,
                      messages::worker_id w) const {
  auto n = job.workers;
  std::vector<messages::worker_id> out;
  if (n < 2 || w >= n)
    return out;
  out.push_back((w + n - 1) % n); // the ring's predecessor and successor
  if (n > 2)
    out.push_back((w + 1) % n);
  std::sort(out.begin(), out.end());
  return out;
}

bool allreduce::lingers() const noexcept {
  return true; // the workers' (equal) models are evaluated
}

bool allreduce::checkpointable() const noexcept {
  return true;
}

bool allreduce::reassigns_steps() const noexcept {
  return false;
}

void allreduce::report(const actors::coordinator_state& st,
                       nlohmann::json& out) const {
  const auto& job = st.config;
  double d = job.init ? static_cast<double>(job.init->size()) : 0.0;
  double w = job.workers;
  // Each worker's payload per step: 2 (W - 1) / W of its exchanges'
  // values (dense: d) of 4 bytes, up to the rounding of the chunks' sizes
  // (the messages' headers aside).
  double values = reduce.kind == "dense"
                      ? d
                      : static_cast<double>(reducer_values(
                          reduce, static_cast<std::size_t>(d), job.workers));
  std::size_t exchanges
      = reduce.kind == "dense" || reduce.kind == "sfb" ? 1 : 2;
  out["allreduce"] = {{"optimizer", local.optimizer.name},
                      {"lr", local.lr},
                      {"evaluated", evaluated_mean(job)},
                      {"ring", job.workers},
                      {"reducer", reduce.kind},
                      {"messages_per_step", 2 * (job.workers - 1) * exchanges},
                      {"payload_bytes_per_step", 2 * (w - 1) / w * values * 4},
                      {"header_bytes", messages::ring_chunk_header_bytes}};
  if (reduce.kind == "powersgd")
    out["allreduce"]["rank"] = reduce.rank;
  if (reduce.kind == "scalecom") {
    out["allreduce"]["density"] = reduce.density;
    out["allreduce"]["beta"] = reduce.beta;
  }
  if (reduce.kind == "sfb") {
    auto factored = nlohmann::json::array();
    for (const auto& l : sfb_chosen(reduce, job.workers))
      factored.push_back(l.name);
    out["allreduce"]["sfb_layers"] = factored;
    out["allreduce"]["dense_layers"] = reduce.fc.size();
  }
}

void allreduce::report_worker(const messages::worker_stats& stats,
                              nlohmann::json& out) const {
  out["allreduces"] = stats.mixes;
  out["timeouts"] = stats.timeouts;
  out["refused_chunks"] = stats.mix_discarded;
}

} // namespace troupe::algos
