// Sandblaster's checkpoints (issue [11]): the driver takes them itself, at
// an iteration boundary, where no vector command, pass or portion is under
// way: every shard answers its state file, the driver adds its own and the
// workers' and hands them to the job's writer (the manifest, rotation and
// atomic writes of optim/checkpoint_dir.hpp) with its progress and trace. A
// stop (a signal, the time limit) waits for the next boundary, writes one
// there and ends the run. A resumed run loads the files back and starts at
// the checkpoint's boundary.

#include <algorithm>
#include <memory>

#include <caf/all.hpp>

#include "actors/comm_policy.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "algos/sandblaster/detail/lbfgs_driver.hpp"
#include "algos/sandblaster/detail/lbfgs_state.hpp"

namespace troupe::algos::detail {

using namespace messages;

namespace {

constexpr const char* driver_file = "algo-driver-0.state";

std::string shard_file(std::size_t k) {
  return "shard-" + std::to_string(k) + ".state";
}

std::string worker_file(std::size_t w) {
  return "worker-" + std::to_string(w) + ".state";
}

/// Whether a checkpoint is due at this boundary.
bool due(lbfgs_driver_ptr self) {
  const auto& st = self->state;
  const auto& c = st.job->checkpoints;
  if (!c.write || st.iterations == st.checkpointed)
    return false;
  if (st.stopping)
    return true;
  if (c.every_steps > 0)
    return st.iterations / c.every_steps != st.checkpointed / c.every_steps;
  return actors::seconds_since(self, st.checkpoint_time) >= c.every_seconds;
}

/// The checkpoint's files are all here: writes it (the shards' files in
/// `files`), logs it, and goes on with `k`.
void write(lbfgs_driver_ptr self, std::map<std::string, std::string> files,
           actors::time_point began, const std::function<void()>& k) {
  auto& st = self->state;
  auto steps = static_cast<std::uint64_t>(st.iterations);
  actors::resume_point state;
  state.files = std::move(files);
  state.files[driver_file] = save_lbfgs_driver(st);
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    state.files[worker_file(w)] = save_lbfgs_worker(st, w);
  state.progress = {{"total_steps", steps},
                    {"total_samples", st.evaluated},
                    {"seconds", elapsed(self)},
                    {"trace", st.trace}};
  auto t0 = actors::now(self);
  try {
    auto where = st.job->checkpoints.write(steps, state);
    std::uint64_t bytes = 0;
    for (auto& [name, b] : state.files)
      bytes += b.size();
    st.checkpoint_log.push_back(
        {{"steps", steps},
         {"path", where},
         {"bytes", bytes},
         {"write_seconds", actors::seconds_since(self, t0)},
         {"pause_seconds", actors::seconds_since(self, began)}});
    actors::detail::log().info(
        "lbfgs: checkpoint at iteration {} written to {}", steps, where);
    st.kept = std::move(state);
  } catch (const std::exception& e) {
    actors::detail::log().error(
        "lbfgs: checkpoint at iteration {} not written: {}", steps, e.what());
    st.checkpoint_log.push_back({{"steps", steps}, {"error", e.what()}});
  }
  st.checkpointed = steps;
  st.checkpoint_time = actors::now(self);
  st.checkpointing = false;
  k();
}

} // namespace

void boundary(lbfgs_driver_ptr self, std::function<void()> k) {
  auto& st = self->state;
  const auto& job = *st.job;
  if (!st.stopping && job.max_seconds > 0
      && elapsed(self) - st.seconds_before >= job.max_seconds)
    st.stopping = "time limit reached";
  if (!due(self)) {
    k();
    return;
  }
  st.checkpointing = true;
  auto began = actors::now(self);
  auto files = std::make_shared<std::map<std::string, std::string>>();
  auto left = std::make_shared<std::size_t>(st.shards.size());
  auto failed = std::make_shared<bool>(false);
  // A shard lost meanwhile rolled the run back: this one is abandoned.
  auto gone = outdated(self);
  for (std::size_t i = 0; i < st.shards.size(); ++i)
    self->request(st.shards[i], job.request_timeout, save_atom::value)
        .then(
            [self, i, files, left, failed, began, k, gone](std::string& bytes) {
              (*files)[shard_file(i)] = std::move(bytes);
              if (--*left > 0 || *failed || gone())
                return;
              write(self, std::move(*files), began, k);
            },
            [self, i, failed, k, gone](caf::error& e) {
              auto& st = self->state;
              if (*failed || gone())
                return;
              *failed = true;
              auto why = "shard " + std::to_string(i)
                         + " did not save: " + self->system().render(e);
              actors::detail::log().warn(
                  "lbfgs: checkpoint at iteration {} abandoned: {}",
                  st.iterations, why);
              st.checkpoint_log.push_back(
                  {{"steps", st.iterations}, {"error", why}});
              st.checkpointed = st.iterations;
              st.checkpoint_time = actors::now(self);
              st.checkpointing = false;
              k();
            });
}

void request_stop(lbfgs_driver_ptr self) {
  auto& st = self->state;
  if (st.finished || st.stopping)
    return;
  st.stopping = st.job->stop ? st.job->stop->reason() : "stopped";
  if (st.stopping->empty())
    *st.stopping = "stopped";
  actors::detail::log().info(
      "lbfgs: {}: stopping at the next iteration boundary", *st.stopping);
  // (stop_atom, n): no boundary came within the request timeout.
  self->delayed_send(self, actors::to_chrono(st.job->request_timeout),
                     stop_atom::value, std::uint64_t{st.iterations});
}

void stop_timeout(lbfgs_driver_ptr self, std::uint64_t iteration) {
  auto& st = self->state;
  if (!actors::detail::from_here(self) || st.finished || st.checkpointing
      || !st.stopping)
    return;
  actors::detail::log().warn(
      "lbfgs: no iteration boundary within the request timeout after "
      "the stop at iteration {}: stopping without a checkpoint",
      iteration);
  finish(self, *st.stopping);
}

void restore(lbfgs_driver_ptr self, std::function<void()> k) {
  auto& st = self->state;
  const auto& from = *st.job->resume;
  auto bad = [self, path = from.path](const std::string& what) {
    finish(self, "failed", "lbfgs: cannot resume from " + path + ": " + what,
           false);
  };
  auto file = [&from](const std::string& name) -> const std::string* {
    auto it = from.files.find(name);
    return it == from.files.end() ? nullptr : &it->second;
  };
  try {
    const auto* d = file(driver_file);
    if (!d)
      return bad(std::string{"no "} + driver_file);
    load_lbfgs_driver(st, *d, from.path + "/" + driver_file);
    for (std::size_t w = 0; w < st.workers.size(); ++w) {
      const auto* f = file(worker_file(w));
      if (!f)
        return bad("no " + worker_file(w));
      load_lbfgs_worker(st, w, *f, from.path + "/" + worker_file(w));
    }
    st.trace = from.progress.at("trace");
    st.seconds_before = from.progress.at("seconds").get<double>();
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  st.checkpointed = st.iterations;
  st.started -= std::chrono::duration_cast<actors::time_point::duration>(
      std::chrono::duration<double>(st.seconds_before));
  actors::detail::log().info("lbfgs: resumed from {} at iteration {} (pass {})",
                             from.path, st.iterations, st.pass);
  load_shards(self, from.files, std::move(k), bad);
}

void load_shards(lbfgs_driver_ptr self,
                 const std::map<std::string, std::string>& files,
                 std::function<void()> k,
                 std::function<void(const std::string&)> bad) {
  auto& st = self->state;
  auto left = std::make_shared<std::size_t>(st.shards.size());
  auto gone = outdated(self);
  for (std::size_t i = 0; i < st.shards.size(); ++i) {
    auto f = files.find(shard_file(i));
    if (f == files.end())
      return bad("no " + shard_file(i));
    self->request(st.shards[i], st.job->request_timeout, resume_atom::value,
                  f->second)
        .then(
            [left, k, gone](ack_atom) {
              if (--*left == 0 && !gone())
                k();
            },
            [self, bad, i, gone](caf::error& e) {
              if (!gone())
                bad("shard " + std::to_string(i) + ": "
                    + self->system().render(e));
            });
  }
}

bool roll_back(lbfgs_driver_ptr self, std::size_t k, const std::string& node,
               const std::string& why) {
  auto& st = self->state;
  if (st.finished || !st.kept || k >= st.shards.size())
    return false;
  const auto& kept = *st.kept;
  auto it = kept.files.find(driver_file);
  if (it == kept.files.end())
    return false;
  // Numbers that go on counting: a pass or a portion's serial of before the
  // roll-back never matches one of after it (their late answers are
  // ignored); the lost workers stay lost.
  auto pass = st.pass, handed = st.handed, lost = st.lost;
  // A second shard lost during a roll-back was lost at the first's point.
  auto at
      = st.rolling_back && !st.restored.empty()
            ? st.restored.back().value("iteration_at_loss", std::uint64_t{0})
            : std::uint64_t{st.iterations};
  try {
    load_lbfgs_driver(st, it->second,
                      std::string{"the kept checkpoint's "} + driver_file);
    for (std::size_t w = 0; w < st.workers.size(); ++w)
      load_lbfgs_worker(st, w, kept.files.at(worker_file(w)),
                        "the kept checkpoint's " + worker_file(w));
  } catch (const std::exception& e) {
    actors::detail::log().error("lbfgs: cannot roll back: {}", e.what());
    return false;
  }
  ++st.generation;
  st.forgotten = std::max(st.forgotten, pass);
  st.pass = std::max(st.pass, pass);
  st.handed = std::max(st.handed, handed);
  st.lost = lost;
  st.trace = kept.progress.value("trace", nlohmann::json::array());
  st.table.reset();
  st.pass_done = nullptr;
  st.machine.reset();
  st.checkpointing = false;
  st.checkpointed = st.iterations;
  std::fill(st.busy.begin(), st.busy.end(), false);
  const auto& job = *st.job;
  auto h = self->spawn(lbfgs_shard,
                       lbfgs_shard_config{static_cast<std::uint32_t>(k),
                                          st.ranges[k], job.init,
                                          job.options.memory, self->address()});
  self->monitor(h);
  st.shards[k] = h;
  if (k < st.where.shard_node.size())
    st.where.shard_node[k] = -1; // here now: stopped by the driver
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.live[w])
      self->send(st.workers[w], rebind_atom::value,
                 static_cast<std::uint32_t>(k), caf::actor_cast<caf::actor>(h));
  st.restored.push_back({{"shard", k},
                         {"node", node},
                         {"reason", why},
                         {"checkpoint_iteration", st.iterations},
                         {"iteration_at_loss", at},
                         {"seconds", elapsed(self)}});
  actors::detail::log().warn(
      "lbfgs: shard {} ({}) was lost at iteration {}: restored here; every "
      "shard goes back to the checkpoint at iteration {}",
      k, node, at, st.iterations);
  st.rolling_back = true;
  load_shards(
      self, kept.files,
      [self] {
        self->state.rolling_back = false;
        go_on(self);
      },
      [self](const std::string& what) {
        finish(self, "failed", "lbfgs: cannot roll back: " + what, false);
      });
  return true;
}

} // namespace troupe::algos::detail
