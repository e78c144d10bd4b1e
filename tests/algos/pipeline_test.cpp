// Pipelined replicas in Downpour (--stages): with one replica under a
// staleness bound of 0 and one micro-batch they train bit for bit as the
// unpartitioned worker does; no stage touches a shard outside its slice; a
// killed middle stage is rebuilt and the job completes.

#include <cmath>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/local_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <catch2/catch.hpp>

#include "actors/roles.hpp"
#include "algos/downpour/downpour.hpp"
#include "algos/sync/sync.hpp"
#include "harness.hpp"
#include "optim/model_spec.hpp"
#include "optim/synthetic.hpp"
#include "optim/trainer.hpp"

using namespace troupe;

namespace {

constexpr std::uint64_t seed = 16;

// Five layers: stages can be cut anywhere between them.
const std::string model
    = R"({"name": "tiny", "layers": [{"type": "dense", "units": 12},
        {"type": "relu"}, {"type": "dense", "units": 8}, {"type": "relu"},
        {"type": "dense", "units": "classes"}]})";

std::shared_ptr<const optim::dataset> data() {
  optim::logreg_options o;
  o.m = 512;
  o.d = 16;
  o.seed = seed;
  return std::make_shared<const optim::dataset>(
      optim::to_dataset(optim::make_logreg(o)));
}

struct settings {
  std::string algo = "downpour";
  std::uint64_t stages = 1;
  std::uint64_t micros = 1;
  std::string schedule = "gpipe";
  std::string cut;
  std::int64_t bound = 0;
  std::uint32_t workers = 1;
  std::uint64_t steps = 40;
};

/// A Downpour job of `s` on `d`, built as `troupe train` builds it.
actors::job_config make_job(std::shared_ptr<const optim::dataset> d,
                            const settings& s) {
  std::shared_ptr<algos::algorithm> algo;
  algos::pipeline_hosting* host = nullptr;
  if (s.algo == "sync") {
    auto a = std::make_shared<algos::sync>();
    host = a.get();
    algo = a;
  } else {
    auto a = std::make_shared<algos::downpour>();
    a->staleness_bound = s.bound;
    host = a.get();
    algo = a;
  }
  host->pipeline_settings.stages = s.stages;
  host->pipeline_settings.micro_batches = s.micros;
  host->pipeline_settings.schedule = s.schedule;
  host->pipeline_settings.cut = s.cut;
  actors::job_config job;
  job.workers = s.workers;
  job.shards = 2;
  auto init = optim::build_model<float>(model, d->sample_shape, d->classes);
  init.init(seed);
  job.init = std::make_shared<const std::vector<float>>(
      init.params(), init.params() + init.size());
  std::vector<std::size_t> all(d->size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  auto parts
      = std::make_shared<std::vector<std::vector<std::size_t>>>(s.workers);
  for (std::size_t i = 0; i < all.size(); ++i)
    (*parts)[i % s.workers].push_back(i);
  job.batches = [d, parts](messages::worker_id w) {
    return optim::batch_source{d, (*parts)[w], 16, seed + 7919 * (w + 1), {}};
  };
  job.make_replica = [source = job.batches](messages::worker_id w) {
    return optim::make_model_replica(model, source(w), seed);
  };
  job.steps_per_worker = s.steps;
  job.final_params = std::make_shared<std::vector<float>>();
  algos::job_options o;
  o.model = model;
  o.batch = 16;
  o.seed = seed;
  o.workers = s.workers;
  o.shards = 2;
  o.lr = 0.5;
  o.epochs = 1;
  o.lr_decay = 0.5;     // (what `troupe train` resolves from the model's
  o.lr_step_epochs = 1; // defaults)
  algos::job_build b{o, job};
  b.train = d;
  b.examples = d->size();
  b.batches_per_epoch = d->size() / 16;
  b.batches = d->size() / 16;
  b.steps_per_worker = s.steps;
  b.layers = init.ranges().ranges();
  job.server.optimizer.name = "sgd";
  job.server.lr_schedule = b.server_schedule(static_cast<double>(b.batches));
  algo->build(b);
  job.algorithm = algo;
  return job;
}

double loss_of(const std::vector<float>& params, const optim::dataset& d) {
  auto m = optim::build_model<float>(model, d.sample_shape, d.classes);
  REQUIRE(params.size() == m.size());
  std::copy(params.begin(), params.end(), m.params());
  return optim::evaluate(m, d, 64).loss;
}

/// Runs `job` under the seeded scheduler; with `kill_after` > 0, the actor
/// named `victim` is killed once that many actors ran.
nlohmann::json run(actors::job_config job, std::size_t kill_after = 0,
                   const std::string& victim = "") {
  std::size_t handled = 0;
  bool killed = kill_after == 0;
  auto out = test::run_seeded(
      std::move(job), seed, [&](caf::scheduler::test_coordinator& sched) {
        if (killed || ++handled <= kill_after)
          return;
        for (auto* j : sched.jobs) {
          auto* a = dynamic_cast<caf::local_actor*>(j);
          if (a && victim == a->name()) {
            caf::anon_send_exit(caf::actor_cast<caf::actor>(a),
                                caf::exit_reason::kill);
            killed = true;
            return;
          }
        }
      });
  REQUIRE(killed);
  return out;
}

std::vector<float> final_params(const settings& s,
                                std::shared_ptr<const optim::dataset> d,
                                nlohmann::json* out = nullptr) {
  auto job = make_job(d, s);
  auto params = job.final_params;
  auto report = run(std::move(job));
  INFO(report.dump().substr(0, 2000));
  REQUIRE_FALSE(report.contains("error"));
  CHECK(report["steps"] == s.steps * s.workers);
  if (out)
    *out = report;
  return *params;
}

} // namespace

TEST_CASE("one replica under a staleness bound of 0 trains as the "
          "unpartitioned worker",
          "[pipeline]") {
  std::cout << "pipeline actors test seed " << seed << std::endl;
  auto d = data();
  const auto whole = final_params(settings{}, d);
  const double start = loss_of(*make_job(d, settings{}).init, *d);
  const double end = loss_of(whole, *d);
  std::cout << "  unpartitioned: loss " << start << " -> " << end << "\n";
  CHECK(end < start - 0.05);
  for (std::uint64_t stages : {2, 3, 5}) {
    settings s;
    s.stages = stages;
    INFO(stages << " stages, one micro-batch");
    const auto cut = final_params(s, d);
    REQUIRE(cut.size() == whole.size());
    // Bit-equal: each stage computes its layers as the whole model does,
    // and the shards apply the same pushes in the same order.
    CHECK(std::memcmp(cut.data(), whole.data(), 4 * whole.size()) == 0);
  }
  // GPipe's micro-batches sum the batch's gradient in another order: the
  // same run up to rounding.
  settings s;
  s.stages = 3;
  s.micros = 4;
  const auto micro = final_params(s, d);
  double worst = 0;
  for (std::size_t i = 0; i < whole.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(micro[i] - whole[i])));
  std::cout << "  GPipe, 4 micro-batches: largest difference " << worst << "\n";
  CHECK(worst < 1e-4);
}

TEST_CASE("sync with pipelined replicas trains as sync with whole workers",
          "[pipeline]") {
  auto d = data();
  settings s;
  s.algo = "sync";
  s.workers = 2;
  s.steps = 30;
  const auto whole = final_params(s, d);
  s.stages = 3;
  nlohmann::json report;
  const auto cut = final_params(s, d, &report);
  REQUIRE(cut.size() == whole.size());
  // Each round averages the same two pushes: the replicas' gradients are
  // bit-equal to the workers'.
  CHECK(std::memcmp(cut.data(), whole.data(), 4 * whole.size()) == 0);
  CHECK(report["pipeline"]["cut"] == "dense1 | relu1 | dense2..dense3");
}

TEST_CASE("no stage fetches or pushes outside its slice", "[pipeline]") {
  auto d = data();
  settings s;
  s.stages = 3;
  s.micros = 2;
  s.workers = 2;
  s.bound = -1;
  s.steps = 12;
  auto job = make_job(d, s);
  const auto* host
      = dynamic_cast<const algos::pipeline_host*>(job.algorithm.get());
  REQUIRE(host);
  REQUIRE(host->pipeline());
  const auto& layout = host->pipeline()->layout;
  const auto ranges = actors::shard_ranges(job);
  REQUIRE(ranges.size() == job.shards);
  std::vector<actors::shard_ref> refs;
  for (const auto& r : ranges)
    refs.push_back({actors::parameter_shard_actor{}, r});
  for (std::uint32_t st = 0; st < layout.stages.size(); ++st) {
    const auto& plan = layout.stages[st];
    const auto c = algos::stage_config_of(job, *host->pipeline(), 1, st, refs);
    std::size_t covered = 0;
    for (const auto& sh : c.shards) {
      CHECK(sh.range.offset >= plan.param_offset);
      CHECK(sh.range.offset + sh.range.size
            <= plan.param_offset + plan.param_size);
      covered += sh.range.size;
    }
    CHECK(covered == plan.param_size);
  }
  nlohmann::json report;
  final_params(s, d, &report);
  // Each shard took one push per step of each replica: from the one stage
  // that holds it, and none was refused.
  for (const auto& sh : report["shard_stats"]) {
    CHECK(sh["applied"] == s.steps * s.workers);
    CHECK(sh["rejected"] == 0);
  }
  CHECK(report["pipeline"]["shards"] == job.shards);
}

TEST_CASE("1F1B with weight stashing trains", "[pipeline]") {
  auto d = data();
  settings s;
  s.stages = 3;
  s.micros = 4;
  s.schedule = "1f1b";
  s.bound = -1;
  const auto params = final_params(s, d);
  const double start = loss_of(*make_job(d, s).init, *d);
  const double end = loss_of(params, *d);
  std::cout << "  1F1B: loss " << start << " -> " << end << "\n";
  CHECK(end < start - 0.05);
}

TEST_CASE("a killed middle stage is rebuilt and the job completes",
          "[pipeline]") {
  auto d = data();
  settings s;
  s.stages = 3;
  s.micros = 2;
  s.bound = -1;
  auto job = make_job(d, s);
  auto params = job.final_params;
  const double start = loss_of(*job.init, *d);
  auto report = run(std::move(job), 400, "pipeline_stage 1 of 0");
  INFO(report.dump().substr(0, 2000));
  REQUIRE_FALSE(report.contains("error"));
  CHECK(report["stop_reason"] == "steps done");
  CHECK(report["steps"] == s.steps);
  CHECK(report["pipeline"]["rebuilds"] == 1);
  const double end = loss_of(*params, *d);
  const double whole = loss_of(final_params(s, d), *d);
  std::cout << "  killed stage 1: loss " << start << " -> " << end
            << " (not killed: " << whole << ")\n";
  CHECK(end < start - 0.05);
  // The step under way when the stage died ran again; the pushes its other
  // stages had sent were dropped as duplicates by their sequence numbers.
  CHECK(std::abs(end - whole) < 0.01);
}
