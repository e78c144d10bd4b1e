// The coordinator's part of a pipelined job: every replica's stages are
// spawned (next to the replica's head, then round the nodes), wired, and a
// lost stage is rebuilt where a node answers; the replica's generation grows
// so that what the old stages had in flight is dropped, and its head starts
// the step again. With nowhere left to build it, the replica is given up:
// its head is stopped, and the coordinator hands its steps to the others.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/exit_reason.hpp>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/role_registry.hpp"
#include "actors/roles.hpp"
#include "algos/pipeline/pipeline.hpp"
#include "algos/pipeline/pipeline_head.hpp"
#include "messages/pipeline.hpp"
#include "optim/model_spec.hpp"

namespace troupe::algos {

using namespace actors;
using namespace messages;

stage_config stage_config_of(const job_config& job, const pipeline_job& p,
                             worker_id r, std::uint32_t s,
                             const std::vector<shard_ref>& shards) {
  const auto& layout = p.layout;
  if (s >= layout.stages.size())
    throw std::invalid_argument("stage " + std::to_string(s) + " of a "
                                + std::to_string(layout.stages.size())
                                + "-stage pipeline");
  if (shards.size() != layout.shards.size())
    throw std::invalid_argument(std::to_string(shards.size())
                                + " shards for a pipeline laid out on "
                                + std::to_string(layout.shards.size()));
  stage_config c;
  c.replica = r;
  c.stage = s;
  c.stages = static_cast<std::uint32_t>(layout.stages.size());
  c.model = p.model;
  c.input = p.input;
  c.classes = p.classes;
  c.plan = layout.stages[s];
  c.share = cost_share(layout.layers, c.plan);
  c.shards.assign(
      shards.begin() + static_cast<std::ptrdiff_t>(layout.first_shard[s]),
      shards.begin() + static_cast<std::ptrdiff_t>(layout.first_shard[s + 1]));
  c.schedule = p.flags.parsed_schedule();
  c.micros = static_cast<std::uint32_t>(p.flags.micro_batches);
  c.stash = p.flags.weight_stashing;
  c.max_samples = p.batch;
  c.seed = p.seed;
  c.request_timeout = job.request_timeout;
  return c;
}

void configure_head(const job_config& job, const pipeline_job& p,
                    worker_config& config) {
  if (!job.batches)
    throw std::invalid_argument("--stages needs the training data in memory "
                                "(not a data directory's files)");
  const bool regression = optim::model_loss(p.model) == optim::loss_kind::mse;
  config.make_replica = [source = job.batches, w = config.id, regression] {
    return std::unique_ptr<optim::replica>(
        new head_replica(source(w), regression));
  };
  auto stages = static_cast<std::uint32_t>(p.layout.stages.size());
  auto micros = static_cast<std::uint32_t>(p.flags.micro_batches);
  config.make_policy = [id = config.id, stages, micros](std::size_t) {
    return make_head_policy(id, stages, micros);
  };
}

namespace {

class pipeline_run : public algorithm_run {
public:
  explicit pipeline_run(pipeline_job p) : p_(std::move(p)) {}

  void provision(coordinator_ptr self, std::function<void()> ready) override {
    const auto& c = self->state.config;
    const auto n = p_.layout.stages.size();
    replicas_.assign(c.workers, replica{});
    auto pending = std::make_shared<std::size_t>(c.workers * n);
    for (std::uint32_t r = 0; r < c.workers; ++r) {
      replicas_[r].stages.resize(n);
      replicas_[r].where.resize(n);
      for (std::uint32_t s = 0; s < n; ++s) {
        const int base = c.placement.worker_at(r);
        const int at
            = base < 0
                  ? -1
                  : static_cast<int>((base + s) % c.placement.nodes.size());
        spawn(self, r, s, at, 0, [this, self, pending, ready](bool ok) {
          if (!ok)
            return; // placement_failed ended the job
          if (--*pending == 0) {
            for (std::uint32_t i = 0; i < replicas_.size(); ++i)
              wire(self, i);
            ready();
          }
        });
      }
    }
    if (*pending == 0)
      ready();
  }

  bool on_down(coordinator_ptr self, const caf::down_msg& msg) override {
    for (std::uint32_t r = 0; r < replicas_.size(); ++r) {
      auto& rep = replicas_[r];
      for (std::uint32_t s = 0; s < rep.stages.size(); ++s) {
        if (!rep.stages[s] || rep.stages[s].address() != msg.source)
          continue;
        rep.stages[s] = nullptr;
        auto& st = self->state;
        const bool head_gone = r >= st.gone.size() || st.gone[r]
                               || r >= st.live.size() || !st.live[r];
        if (stopped_ || st.finishing || head_gone
            || msg.reason == caf::exit_reason::normal)
          return true; // it followed its head, or the job is ending
        ++rebuilds_;
        actors::detail::log().warn(
            "pipeline stage {} of replica {} was lost ({}); "
            "rebuilding it",
            s, r, self->system().render(msg.reason));
        const auto nodes = static_cast<int>(st.config.placement.nodes.size());
        spawn(self, r, s, next_place(rep.where[s], nodes), nodes,
              [this, self, r](bool ok) {
                if (ok)
                  wire(self, r);
              });
        return true;
      }
    }
    return false;
  }

  /// A shard restored from a checkpoint has a new handle, which its
  /// stages' configurations lack: they are stopped and rebuilt with it.
  void shard_restored(coordinator_ptr self, std::size_t i,
                      const caf::actor&) override {
    const auto& first = p_.layout.first_shard;
    for (std::size_t s = 0; s + 1 < first.size(); ++s)
      if (i >= first[s] && i < first[s + 1])
        for (auto& rep : replicas_)
          if (rep.stages[s])
            self->send_exit(rep.stages[s], caf::exit_reason::kill);
  }

  void stop(coordinator_ptr self) override {
    stopped_ = true;
    for (auto& rep : replicas_)
      for (auto& s : rep.stages)
        if (s)
          self->send_exit(s, caf::exit_reason::user_shutdown);
  }

  void report(const coordinator_state& st, nlohmann::json& out, std::uint64_t&,
              std::uint64_t&) const override {
    // The bubble as measured: the stages' idle share of their replicas'
    // steps (a head's compute and wait are its stages'), and GPipe's
    // (S - 1) / (M + S - 1).
    double busy = 0, idle = 0;
    for (const auto& w : st.worker_reports) {
      busy += static_cast<double>(w.compute_ns);
      idle += static_cast<double>(w.wait_ns);
    }
    const auto n = static_cast<double>(p_.layout.stages.size());
    const auto m = static_cast<double>(p_.flags.micro_batches);
    // Activations forward and their gradients back, per sample.
    std::uint64_t act = 0;
    for (std::size_t s = 1; s < p_.layout.stages.size(); ++s)
      act += 2 * 4 * p_.layout.stages[s].in_values;
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : p_.layout.stages) {
      stages.push_back({{"first", p_.layout.layers[s.first].name},
                        {"last", p_.layout.layers[s.last - 1].name},
                        {"params", s.param_size},
                        {"in_values", s.in_values}});
    }
    out["pipeline"]
        = {{"stages", stages},
           {"cut", optim::describe_cut(p_.layout.layers, p_.layout.stages)},
           {"schedule", p_.flags.schedule},
           {"micro_batches", p_.flags.micro_batches},
           {"weight_stashing", p_.flags.weight_stashing},
           {"shards", p_.layout.shards.size()},
           {"rebuilds", rebuilds_},
           {"bubble_fraction", busy + idle > 0 ? idle / (busy + idle) : 0.0},
           {"bubble_expected", (n - 1) / (m + n - 1)},
           {"activation_bytes_per_sample", act},
           {"replicas_lost", lost_}};
  }

private:
  struct replica {
    std::vector<caf::actor> stages;
    std::vector<int> where; // node index, -1: the coordinator's process
    std::uint64_t generation = 0;
  };

  // After `at`: the next node, round the nodes, then this process.
  static int next_place(int at, int nodes) {
    if (nodes == 0 || at + 1 >= nodes)
      return -1;
    return at + 1;
  }

  // Spawns stage s of replica r at `at`, trying up to `retries` further
  // places if a node does not answer; done(true) once it runs.
  void spawn(coordinator_ptr self, std::uint32_t r, std::uint32_t s, int at,
             int retries, std::function<void(bool)> done) {
    auto& c = self->state.config;
    auto placed = [this, self, r, s, at, done](const caf::actor& h) {
      replicas_[r].stages[s] = h;
      replicas_[r].where[s] = at;
      self->monitor(h);
      done(true);
    };
    if (at < 0) {
      try {
        auto cfg = stage_config_of(c, p_, r, s, self->state.shards);
        cfg.owner = self->node();
        placed(spawn_stage(self->system(), std::move(cfg)));
      } catch (const std::exception& e) {
        give_up(self, r, s, e.what(), done);
      }
      return;
    }
    std::vector<caf::actor> shard_handles;
    for (auto& sh : self->state.shards)
      shard_handles.push_back(caf::actor_cast<caf::actor>(sh.handle));
    auto agent = c.placement.nodes.at(static_cast<std::size_t>(at));
    self->request(agent, c.request_timeout, spawn_atom::value,
                  std::string{"pipeline_stage"},
                  caf::make_message(r, s, shard_handles))
        .then([placed](caf::actor& h) { placed(h); },
              [this, self, r, s, at, retries, done](caf::error& err) {
                auto why = self->system().render(err);
                if (retries > 0) {
                  const auto nodes = static_cast<int>(
                      self->state.config.placement.nodes.size());
                  spawn(self, r, s, next_place(at, nodes), retries - 1, done);
                  return;
                }
                give_up(self, r, s, why, done);
              });
  }

  void give_up(coordinator_ptr self, std::uint32_t r, std::uint32_t s,
               const std::string& why, const std::function<void(bool)>& done) {
    auto& st = self->state;
    if (!st.provisioned) {
      actors::detail::placement_failed(
          self, "could not start pipeline stage " + std::to_string(s)
                    + " of replica " + std::to_string(r) + ": " + why);
      done(false);
      return;
    }
    // Nowhere to rebuild it: the replica is lost, and its head with it (the
    // coordinator hands the head's steps to the other replicas).
    ++lost_;
    actors::detail::log().error(
        "pipeline replica {} is lost: stage {} could not be "
        "rebuilt: {}",
        r, s, why);
    for (auto& h : replicas_[r].stages)
      if (h)
        self->send_exit(h, caf::exit_reason::user_shutdown);
    if (r < st.workers.size() && st.workers[r])
      self->send_exit(st.workers[r], caf::exit_reason::user_shutdown);
    done(false);
  }

  void wire(coordinator_ptr self, std::uint32_t r) {
    auto& rep = replicas_[r];
    for (const auto& h : rep.stages)
      if (!h)
        return; // a rebuild under way wires it when done
    auto& st = self->state;
    if (r >= st.workers.size() || !st.workers[r])
      return;
    stage_wiring_msg w{++rep.generation,
                       caf::actor_cast<caf::actor>(st.workers[r]), rep.stages};
    // (The coordinator is statically typed; stages and the head's policy
    // handle messages of their own.)
    for (const auto& h : rep.stages)
      caf::unsafe_send_as(self, h, w);
    caf::unsafe_send_as(self, caf::actor_cast<caf::actor>(st.workers[r]), w);
  }

  pipeline_job p_;
  std::vector<replica> replicas_;
  bool stopped_ = false;
  std::uint64_t rebuilds_ = 0;
  std::uint64_t lost_ = 0;
};

caf::actor spawn_stage_role(role_context& ctx, const std::uint32_t& r,
                            const std::uint32_t& s,
                            const std::vector<caf::actor>& shards) {
  const auto& job = ctx.job();
  const auto* host = dynamic_cast<const pipeline_host*>(job.algorithm.get());
  if (!host || !host->pipeline())
    throw std::invalid_argument("spawn of a pipeline stage in a job without "
                                "--stages");
  if (r >= job.workers)
    throw std::invalid_argument("a pipeline stage of replica "
                                + std::to_string(r) + " in a job of "
                                + std::to_string(job.workers));
  auto cfg
      = stage_config_of(job, *host->pipeline(), r, s, shard_refs(job, shards));
  // Only the coordinator's node wires it.
  if (auto sender = ctx.self()->current_sender())
    cfg.owner = sender->node();
  return ctx.host(spawn_stage(ctx.self()->system(), std::move(cfg)));
}

} // namespace

std::unique_ptr<algorithm_run> make_pipeline_run(const pipeline_job& p) {
  return std::make_unique<pipeline_run>(p);
}

void add_pipeline_roles(role_registry& roles) {
  if (roles.contains("pipeline_stage"))
    return; // another host registered it
  roles.register_role<std::uint32_t, std::uint32_t, std::vector<caf::actor>>(
      "pipeline_stage", spawn_stage_role);
}

} // namespace troupe::algos
