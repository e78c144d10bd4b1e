// The coordinator's side of checkpoints (issue [11]): have the algorithm's
// roles finish their round (algorithm_run::quiesce), pause every worker at
// its next step boundary (each then has its pushes received by the shards),
// collect the workers' states, the algorithm's roles' and then the
// shards', hand them to the writer with the coordinator's progress, resume
// the workers and the roles. A resumed job starts from such a state
// (restore_progress, roles.cpp, algorithm_run::restore).

#include <algorithm>
#include <memory>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"

namespace troupe::actors::detail {

using namespace messages;

namespace {

using self_ptr = coordinator_ptr;

nlohmann::json progress_of(self_ptr self) {
  const auto& st = self->state;
  return {{"total_steps", st.total_steps},
          {"total_samples", st.total_samples},
          {"next_eval", st.next_eval},
          {"smooth_loss", st.smooth_loss},
          {"last_loss", st.last_loss},
          {"have_eval", st.have_eval},
          {"eval_accuracy", st.last_eval.accuracy.value},
          {"eval_loss", st.last_eval.loss.value},
          {"evaluations", st.evaluations},
          {"worker_steps", st.worker_steps},
          {"quota", st.quota},
          {"seconds", seconds_since(self, st.t0)}};
}

/// The shards' files of a checkpoint, kept to restore a lost shard from.
void keep_shard_states(coordinator_state& st, const resume_point& state,
                       std::uint64_t steps) {
  std::vector<std::shared_ptr<const std::string>> files(st.shards.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto it = state.files.find("shard-" + std::to_string(i) + ".state");
    if (it == state.files.end())
      return;
    files[i] = std::make_shared<const std::string>(it->second);
  }
  st.shard_states = std::move(files);
  st.shard_states_steps = steps;
}

/// What happens once the checkpoint is written or abandoned.
void done_checkpoint(self_ptr self, const std::function<void()>& then,
                     bool resume_workers) {
  auto& st = self->state;
  st.checkpointing = false;
  if (st.run)
    st.run->resume(self); // after its quiesce, whatever became of it
  st.checkpoint_steps = st.total_steps;
  st.checkpoint_time = now(self);
  if (st.finish_after_checkpoint) {
    auto reason = std::move(*st.finish_after_checkpoint);
    st.finish_after_checkpoint.reset();
    then();
    finish(self, std::move(reason));
    return;
  }
  if (resume_workers)
    for (std::size_t w = 0; w < st.workers.size(); ++w)
      if (st.live[w] && !st.gone[w])
        self->send(st.workers[w], resume_atom::value);
  then();
}

void write_states(self_ptr self, std::shared_ptr<resume_point> state,
                  std::function<void()> then) {
  auto& st = self->state;
  auto t0 = now(self);
  state->progress = progress_of(self);
  try {
    auto where = st.config.checkpoints.write(st.total_steps, *state);
    std::uint64_t bytes = 0;
    for (auto& [name, b] : state->files)
      bytes += b.size();
    st.checkpoint_log.push_back(
        {{"steps", st.total_steps},
         {"path", where},
         {"bytes", bytes},
         {"write_seconds", seconds_since(self, t0)},
         // From the pause request to the write's end: what the workers lost.
         {"pause_seconds", seconds_since(self, st.checkpoint_began)}});
    log().info("checkpoint at step {} written to {}", st.total_steps, where);
    keep_shard_states(st, *state, st.total_steps);
  } catch (const std::exception& e) {
    log().error("checkpoint at step {} not written: {}", st.total_steps,
                e.what());
    st.checkpoint_log.push_back(
        {{"steps", st.total_steps}, {"error", e.what()}});
  }
  done_checkpoint(self, then, true);
}

/// Gives up the checkpoint under way, saying why.
void abandon(self_ptr self, const std::function<void()>& then,
             const std::string& why) {
  auto& st = self->state;
  log().warn("checkpoint at step {} abandoned: {}", st.total_steps, why);
  st.checkpoint_log.push_back({{"steps", st.total_steps}, {"error", why}});
  done_checkpoint(self, then, true);
}

void save_shards(self_ptr self, std::shared_ptr<resume_point> state,
                 std::function<void()> then);

/// Every worker paused: the algorithm's roles' own files, then the shards'.
void save_algorithm(self_ptr self, std::shared_ptr<resume_point> state,
                    std::function<void()> then) {
  self->state.run->save(self,
                        [self, state, then](algorithm_run::state_files files,
                                            const std::string& error) {
                          if (!error.empty())
                            return abandon(self, then, error);
                          for (auto& [name, bytes] : files)
                            state->files[name] = std::move(bytes);
                          save_shards(self, state, then);
                        });
}

void save_shards(self_ptr self, std::shared_ptr<resume_point> state,
                 std::function<void()> then) {
  auto& st = self->state;
  auto left = std::make_shared<std::size_t>(st.shards.size());
  auto failed = std::make_shared<std::string>();
  if (*left == 0) {
    write_states(self, state, then);
    return;
  }
  for (std::size_t i = 0; i < st.shards.size(); ++i) {
    auto settle = [self, state, then, left, failed] {
      if (--*left > 0)
        return;
      if (failed->empty()) {
        write_states(self, state, then);
        return;
      }
      log().error("checkpoint at step {} abandoned: {}",
                  self->state.total_steps, *failed);
      self->state.checkpoint_log.push_back(
          {{"steps", self->state.total_steps}, {"error", *failed}});
      done_checkpoint(self, then, true);
    };
    self->request(st.shards[i].handle, st.config.request_timeout,
                  save_atom::value)
        .then(
            [state, i, settle](std::string& bytes) {
              state->files["shard-" + std::to_string(i) + ".state"]
                  = std::move(bytes);
              settle();
            },
            [self, i, failed, settle](caf::error& err) {
              *failed = "shard " + std::to_string(i) + ": "
                        + self->system().render(err);
              settle();
            });
  }
}

/// Asks every worker to pause and collects their states (checkpoint()).
void pause_workers(self_ptr self, std::function<void()> then);

} // namespace

bool checkpoint(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  if (!st.config.checkpoints.write || st.checkpointing || st.result)
    return false;
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (!st.started[w] || !st.live[w] || st.gone[w]
        || st.worker_steps[w] >= st.quota[w])
      // Not started yet, finished or lost: no whole state. A worker past its
      // last step may be gone before its exit is seen here (a remote one
      // would leave the pause unanswered until the request timeout).
      return false;
  // A role lost (a shard restored from a checkpoint or taken over by its
  // backup is whole again; a lost backup took nothing with it).
  for (const auto& f : st.failures)
    if (f.role != "shard" && f.role != "shard backup")
      return false;
  for (bool lost : st.shard_lost)
    if (lost)
      return false;
  st.checkpointing = true;
  st.checkpoint_began = now(self);
  // The algorithm's roles first finish what involves the workers.
  st.run->quiesce(self, [self, then](const std::string& error) {
    if (!error.empty())
      return abandon(self, then, error);
    pause_workers(self, then);
  });
  return true;
}

namespace {

void pause_workers(self_ptr self, std::function<void()> then) {
  auto& st = self->state;
  auto state = std::make_shared<resume_point>();
  auto left = std::make_shared<std::size_t>(st.workers.size());
  auto failed = std::make_shared<std::string>();
  st.pause_waits.assign(st.workers.size(), nullptr);
  for (std::size_t w = 0; w < st.workers.size(); ++w) {
    // Each worker settles once: by its answer, its error or its end.
    auto answered = std::make_shared<bool>(false);
    auto settle = [self, state, then, left, failed,
                   answered](const std::string& error) {
      if (*answered)
        return false;
      *answered = true;
      if (!error.empty() && failed->empty())
        *failed = error;
      if (--*left > 0)
        return true;
      self->state.pause_waits.clear();
      if (failed->empty()) {
        save_algorithm(self, state, then);
        return true;
      }
      log().warn("checkpoint at step {} abandoned: {}", self->state.total_steps,
                 *failed);
      done_checkpoint(self, then, true);
      return true;
    };
    st.pause_waits[w] = [settle](const std::string& why) { settle(why); };
    self->request(st.workers[w], st.config.request_timeout, pause_atom::value)
        .then(
            [state, w, settle](std::string& bytes) {
              auto name = "worker-" + std::to_string(w) + ".state";
              state->files[name] = std::move(bytes);
              settle({});
            },
            [self, w, settle](caf::error& err) {
              settle("worker " + std::to_string(w) + ": "
                     + self->system().render(err));
            });
  }
}

} // namespace

void maybe_checkpoint(self_ptr self) {
  auto& st = self->state;
  const auto& c = st.config.checkpoints;
  if (!c.write || st.checkpointing || st.finishing
      || st.total_steps == st.checkpoint_steps)
    return;
  bool due = c.every_steps > 0
                 ? st.total_steps / c.every_steps
                       != st.checkpoint_steps / c.every_steps
                 : seconds_since(self, st.checkpoint_time) >= c.every_seconds;
  if (due)
    checkpoint(self, [] {});
}

void checkpoint_worker_gone(self_ptr self, std::size_t w,
                            const std::string& why) {
  auto& waits = self->state.pause_waits;
  if (w < waits.size() && waits[w]) {
    auto settle = std::move(waits[w]);
    waits[w] = nullptr;
    settle("worker " + std::to_string(w) + " " + why);
  }
}

void restore_progress(self_ptr self) {
  auto& st = self->state;
  const auto& p = st.config.resume->progress;
  st.total_steps = p.at("total_steps").get<std::uint64_t>();
  st.total_samples = p.at("total_samples").get<std::uint64_t>();
  st.next_eval = p.at("next_eval").get<std::uint64_t>();
  st.smooth_loss = p.at("smooth_loss").get<double>();
  st.last_loss = p.at("last_loss").get<double>();
  st.have_eval = p.at("have_eval").get<bool>();
  st.last_eval.accuracy = real{p.at("eval_accuracy").get<double>()};
  st.last_eval.loss = real{p.at("eval_loss").get<double>()};
  st.evaluations = p.at("evaluations");
  auto steps = p.at("worker_steps").get<std::vector<std::uint64_t>>();
  auto quota = p.at("quota").get<std::vector<std::uint64_t>>();
  if (steps.size() != st.workers.size() || quota.size() != st.workers.size())
    throw std::invalid_argument(
        "the checkpoint is of a job with " + std::to_string(steps.size())
        + " workers, not " + std::to_string(st.workers.size()));
  st.worker_steps = steps;
  st.quota = quota;
  st.checkpoint_steps = st.total_steps;
  keep_shard_states(st, *st.config.resume, st.total_steps);
  st.t0 -= std::chrono::duration_cast<time_point::duration>(
      std::chrono::duration<double>(p.at("seconds").get<double>()));
}

} // namespace troupe::actors::detail
