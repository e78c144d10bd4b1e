#include "actors/algorithm.hpp"

#include <memory>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/system_messages.hpp>
#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"

namespace troupe::actors {

// -- algorithm_run: no roles of its own ---------------------------------------

void algorithm_run::provision(coordinator_ptr, std::function<void()> ready) {
  ready();
}

caf::actor algorithm_run::evaluation_source() const {
  return {};
}

std::uint32_t algorithm_run::groups() const noexcept {
  return 0;
}

void algorithm_run::on_steps(coordinator_ptr, std::uint64_t) {
  // nothing to do
}

bool algorithm_run::on_down(coordinator_ptr, const caf::down_msg&) {
  return false;
}

void algorithm_run::finish(coordinator_ptr, std::function<void()> done) {
  done();
}

void algorithm_run::stop(coordinator_ptr) {
  // no roles to stop
}

void algorithm_run::shard_restored(coordinator_ptr self, std::size_t i,
                                   const caf::actor& h) {
  detail::rebind_workers(self, i, h);
}

bool algorithm_run::pushes_sent(
    std::map<messages::worker_id, std::uint64_t>&) const {
  return true; // the workers push, no role of the run
}

void algorithm_run::report(const coordinator_state&, nlohmann::json&,
                           std::uint64_t&, std::uint64_t&) const {
  // no figures of its own
}

void algorithm_run::quiesce(coordinator_ptr,
                            std::function<void(std::string)> done) {
  done({});
}

void algorithm_run::save(coordinator_ptr,
                         std::function<void(state_files, std::string)> done) {
  done({}, {});
}

void algorithm_run::save_roles(
    coordinator_ptr self, std::vector<saved_role> roles,
    std::function<void(state_files, std::string)> done) {
  if (roles.empty())
    return done({}, {});
  struct pending {
    state_files files;
    std::string error;
    std::size_t left = 0;
  };
  auto p = std::make_shared<pending>();
  p->left = roles.size();
  auto settle = [p, done] {
    if (--p->left > 0)
      return;
    if (p->error.empty())
      done(std::move(p->files), {});
    else
      done({}, p->error);
  };
  auto timeout = self->state.config.request_timeout;
  for (auto& r : roles)
    self->request(r.handle, timeout, messages::save_atom::value)
        .then(
            [p, file = r.file, settle](std::string& bytes) {
              p->files[file] = std::move(bytes);
              settle();
            },
            [self, p, name = r.name, settle](caf::error& err) {
              if (p->error.empty())
                p->error = name + ": " + self->system().render(err);
              settle();
            });
}

void algorithm_run::resume(coordinator_ptr) {
  // no roles to resume
}

void algorithm_run::restore(const resume_point&) {
  // no state of its own
}

// -- algorithm: the defaults of an asynchronous algorithm
// ----------------------

void algorithm::check(const job_config&) const {
  // nothing to check
}

std::vector<optim::slice> algorithm::shard_ranges(const job_config& job) const {
  return optim::balanced_split(job.init->size(), job.shards);
}

void algorithm::configure_shard(const job_config&,
                                parameter_shard_config&) const {
  // the job's shard settings as they are
}

std::vector<messages::worker_id>
algorithm::peer_ranks(const job_config& job, messages::worker_id w) const {
  std::vector<messages::worker_id> out;
  for (messages::worker_id v = 0; v < job.workers; ++v)
    if (v != w)
      out.push_back(v);
  return out;
}

bool algorithm::any_peer(const job_config&) const {
  return false;
}

bool algorithm::peer_to_peer() const noexcept {
  return false;
}

bool algorithm::lingers() const noexcept {
  return false;
}

bool algorithm::checkpointable() const noexcept {
  return false;
}

std::string algorithm::checkpoint_refusal() const {
  return "its roles do not save their state";
}

bool algorithm::reassigns_steps() const noexcept {
  return true;
}

bool algorithm::restores_shards(const job_config& job) const {
  return plan(job) == shard_plan::async;
}

bool algorithm::replicates_shards(const job_config& job) const {
  return plan(job) == shard_plan::async && !tracks_clocks(job);
}

std::string algorithm::replica_refusal(const job_config& job) const {
  switch (plan(job)) {
  case shard_plan::none:
    return "it has no parameter shards";
  case shard_plan::sync:
    return "its shards' rounds are not replicated";
  default:
    return tracks_clocks(job)
               ? "its shards' clocks under a staleness bound are not "
                 "replicated"
               : "its pushes are not sent again to a backup that takes over";
  }
}

bool algorithm::elastic(const job_config&) const noexcept {
  return false;
}

std::uint64_t algorithm::warm_start_steps() const noexcept {
  return 0;
}

bool algorithm::tracks_clocks(const job_config&) const noexcept {
  return false;
}

const optim::compress_options*
algorithm::compression(const job_config&) const noexcept {
  return nullptr;
}

std::unique_ptr<algorithm_run> algorithm::start(const job_config&) const {
  return std::make_unique<algorithm_run>();
}

std::optional<nlohmann::json> algorithm::run(caf::actor_system&,
                                             const job_config&,
                                             std::chrono::seconds) const {
  return std::nullopt;
}

void algorithm::report(const coordinator_state&, nlohmann::json&) const {
  // no section of its own
}

void algorithm::report_worker(const messages::worker_stats&,
                              nlohmann::json&) const {
  // no figures of its own
}

} // namespace troupe::actors
