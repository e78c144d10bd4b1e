#include "actors/worker.hpp"

#include <cmath>
#include <stdexcept>

#include <caf/actor_cast.hpp>
#include <caf/message_view.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/sec.hpp>

#include "actors/checkpoint_state.hpp"
#include "actors/clock.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "messages/errors.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

/// A message that neither the core nor the policy handles: logged
/// (rate-limited), counted in the probe, answered with an error if it is a
/// request; the worker goes on.
caf::result<caf::message> unexpected(caf::stateful_actor<worker_state>* self,
                                     caf::message_view& x) {
  static detail::limited_log lines{1};
  auto& st = self->state;
  ++st.unexpected;
  auto what = "worker " + std::to_string(st.config.id) + " has no handler for "
              + to_string(x.content())
              + " (neither its core nor its algorithm's policy handles it)";
  lines.warn(what);
  if (st.probe_) {
    auto scope = on_message(st.probe_.get(), self, msg_type::other,
                            small_message_bytes);
    st.probe_->error();
    st.probe_->gauge("unexpected", static_cast<double>(st.unexpected));
  }
  return caf::make_error(caf::sec::unexpected_message, std::move(what));
}

} // namespace

worker_id worker_state::id() const noexcept {
  return config.id;
}

caf::event_based_actor* worker_state::self() noexcept {
  return actor;
}

optim::replica& worker_state::replica() noexcept {
  return *replica_;
}

std::uint64_t worker_state::steps() const noexcept {
  return counters.steps;
}

std::uint64_t worker_state::clock() const noexcept {
  return start_clock + counters.steps;
}

caf::duration worker_state::request_timeout() const noexcept {
  return config.request_timeout;
}

void worker_state::count_sent(msg_type t, std::uint64_t bytes) noexcept {
  ++counters.messages;
  counters.bytes += bytes;
  if (probe_)
    probe_->sent(t, bytes);
}

actor_probe* worker_state::probe() noexcept {
  return probe_.get();
}

void worker_state::count_wait(std::uint64_t nanoseconds) noexcept {
  counters.wait_ns += nanoseconds;
}

worker_stats worker_state::stats() const {
  auto out = counters;
  out.worker = config.id;
  out.weight = real{policy ? policy->weight() : std::nan("")};
  if (policy)
    policy->add_stats(out);
  return out;
}

void worker_state::schedule_timeout(std::uint64_t seq) {
  actor->delayed_send(actor, to_chrono(config.request_timeout),
                      tick_atom::value, seq);
}

bool worker_state::finished() const noexcept {
  return finished_;
}

void worker_state::count_mix() noexcept {
  ++counters.mixes;
}

void worker_state::count_timeout() noexcept {
  ++counters.timeouts;
}

void worker_state::end_steps() {
  if (finished_)
    return;
  finished_ = true;
  if (policy)
    policy->on_finish(*this);
}

void worker_state::fail(std::string reason) {
  if (finished_)
    return;
  finished_ = true;
  counters.error = "worker " + std::to_string(config.id) + ": " + reason;
  if (probe_) {
    probe_->error();
    probe_->activity("failed");
  }
  detail::log().error("{}", counters.error);
  if (config.coordinator)
    actor->send(config.coordinator, done_atom::value, stats());
  actor->quit();
}

bool worker_state::gradient_finite() const {
  // g * 0 is NaN if and only if g is NaN or infinite. Eight independent
  // sums: one vector add per eight values, not a chain of scalar adds (this
  // runs every step, over every parameter).
  const float* g = replica_->grads();
  const std::size_t n = replica_->size();
  float lane[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t k = 0; k < 8; ++k)
      lane[k] += g[i + k] * 0.0f;
  for (; i < n; ++i)
    lane[0] += g[i] * 0.0f;
  float sum = 0;
  for (float x : lane)
    sum += x;
  return sum == 0.0f;
}

void worker_state::step() {
  if (finished_ || in_step || !started || hold_step())
    return;
  in_step = true;
  if (probe_)
    probe_->activity("waiting");
  // The rest of the step, once the policy is ready. A pause that arrived
  // while the policy waited (for a fetch) holds it until the resume.
  auto compute_and_finish = [this] {
    if (finished_)
      return;
    if (probe_)
      probe_->activity("computing");
    auto t0 = now(actor);
    optim::step_result r;
    try {
      r = replica_->compute();
    } catch (const std::exception& e) {
      fail("step " + std::to_string(counters.steps) + ": " + e.what());
      return;
    }
    if (policy->computes_step())
      did_work(actor, work_kind::step, r.samples);
    spend(actor, config.step_delay);
    if (!gradient_finite()) {
      // The shards reject a non-finite push: a run of them is divergence,
      // not noise to absorb.
      if (config.divergence_steps > 0
          && ++non_finite_run >= config.divergence_steps) {
        fail("step " + std::to_string(counters.steps)
             + ": training diverged: a non-finite gradient "
             + std::to_string(non_finite_run)
             + " steps in a row (the shards reject such pushes); lower --lr");
        return;
      }
    } else {
      non_finite_run = 0;
    }
    counters.compute_ns += nanoseconds_since(actor, t0);
    auto samples = static_cast<std::uint32_t>(r.samples);
    policy->after_compute(*this, samples, [this, r] {
      if (finished_)
        return;
      ++counters.steps;
      counters.samples += r.samples;
      policy->on_step(*this, r.loss);
      if (config.step_counter)
        config.step_counter->store(counters.steps);
      if (probe_)
        note_step(r.loss);
      if (config.coordinator) {
        actor->send(config.coordinator, progress_msg{config.id, counters.steps,
                                                     r.samples, real{r.loss}});
        if (probe_)
          probe_->sent(msg_type::progress, small_message_bytes);
      }
      in_step = false;
      if (counters.steps >= config.max_steps) {
        end_steps();
        if (config.coordinator)
          actor->send(config.coordinator, done_atom::value, stats());
        if (probe_)
          probe_->finish();
        if (!config.linger)
          actor->quit();
        return;
      }
      if (config.yield_steps)
        actor->delayed_send(actor, std::chrono::microseconds{0},
                            step_atom::value);
      else
        actor->send(actor, step_atom::value);
    });
  };
  waiting_ready = true;
  policy->before_compute(*this, [this, compute_and_finish] {
    waiting_ready = false;
    if (paused) {
      deferred = compute_and_finish;
      return;
    }
    compute_and_finish();
  });
}

caf::behavior worker(caf::stateful_actor<worker_state>* self,
                     worker_config config) {
  auto& st = self->state;
  st.actor = self;
  st.config = std::move(config);
  st.probe_ = make_probe(self, "worker " + std::to_string(st.config.id),
                         "worker", true);
  // A monitored peer (SGP, DS-Sync) died: stop sending to it or waiting.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (std::size_t i = 0; i < st.peers.size(); ++i)
      if (st.peers[i] && st.peers[i].address() == msg.source) {
        st.peers[i] = nullptr;
        auto r = st.peer_ranks[i];
        detail::log().warn("worker {}: peer {} is down ({}); no longer a "
                           "target",
                           st.config.id, r, self->system().render(msg.reason));
        if (st.policy)
          st.policy->on_peer_gone(st, r);
      }
  });
  try {
    st.replica_ = st.config.make_replica();
    // An attacker's NaN pushes are its attack, not a divergence to stop.
    if (st.replica_->byzantine())
      st.config.divergence_steps = 0;
    st.policy = st.config.make_policy(st.replica_->size());
    if (st.config.state) {
      load_worker(st, *st.config.state,
                  "worker " + std::to_string(st.config.id) + "'s checkpoint");
      st.restored = true;
    }
  } catch (const std::exception& e) {
    st.fail(std::string{"cannot build the replica: "} + e.what());
  }
  self->set_default_handler(
      [self](caf::scheduled_actor*, caf::message_view& x) {
        return unexpected(self, x);
      });
  caf::message_handler core{
      [self](start_atom, std::uint64_t clock) {
        auto& st = self->state;
        auto scope = on_message(st.probe_.get(), self, msg_type::start,
                                small_message_bytes);
        if (st.started || st.finished_)
          return;
        st.started = true;
        if (!st.restored)
          st.start_clock = clock;
        if (st.counters.steps >= st.config.max_steps) {
          st.end_steps();
          if (st.config.coordinator)
            self->send(st.config.coordinator, done_atom::value, st.stats());
          if (!st.config.linger)
            self->quit();
          return;
        }
        st.step();
      },
      [self](step_atom) {
        auto scope = on_message(self->state.probe_.get(), self, msg_type::step,
                                small_message_bytes);
        self->state.step();
      },
      [self](adopt_atom, worker_id lost, std::uint32_t k, std::uint32_t m,
             std::uint64_t steps) {
        auto& st = self->state;
        auto scope = on_message(st.probe_.get(), self, msg_type::adopt,
                                small_message_bytes);
        if (st.finished_)
          return;
        std::size_t examples = 0;
        // m == 0: steps only (a worker whose earlier hand-over came too
        // late), no data.
        if (m > 0 && st.config.adopt_data && st.replica_) {
          try {
            examples = st.config.adopt_data(*st.replica_, lost, k, m);
          } catch (const std::exception& e) {
            detail::log().warn("worker {} cannot adopt the data of worker {}: "
                               "{}",
                               st.config.id, lost, e.what());
          }
        }
        st.config.max_steps += steps;
        detail::log().info("worker {} takes over {} examples and {} steps of "
                           "lost worker {}",
                           st.config.id, examples, steps, lost);
      },
      [self](stop_atom) -> caf::result<worker_stats> {
        auto& st = self->state;
        if (auto refused = refuse_unless_boss(self, "stop"))
          return *refused;
        auto scope = on_message(st.probe_.get(), self, msg_type::stop,
                                small_message_bytes);
        st.end_steps();
        auto out = st.stats();
        if (!st.config.linger)
          self->quit();
        return out;
      },
      [self](const fetch_msg& f) -> caf::result<params_msg> {
        auto& st = self->state;
        auto scope
            = on_message(st.probe_.get(), self, msg_type::fetch, wire_size(f));
        if (!st.replica_ || f.offset > st.replica_->size()
            || f.size > st.replica_->size() - f.offset)
          return make_error(errc::bad_request,
                            "worker " + std::to_string(st.config.id)
                                + ": a fetch outside its parameters");
        params_msg p;
        p.version = st.counters.steps;
        p.offset = f.offset;
        p.values = tensor{st.replica_->params() + f.offset, f.size};
        if (st.probe_)
          st.probe_->sent(msg_type::params, wire_size(p));
        return p;
      },
      [self](peers_atom, peer_list_msg& m) {
        auto& st = self->state;
        auto scope = on_message(st.probe_.get(), self, msg_type::peers,
                                small_message_bytes
                                    * (m.handles.size() + m.all.size()));
        st.take_peers(m);
      },
      [self](leave_atom, worker_id peer) {
        auto& st = self->state;
        auto scope = on_message(st.probe_.get(), self, msg_type::leave,
                                small_message_bytes);
        if (st.policy && (st.sent_by_peer(peer) || st.from_coordinator()))
          st.policy->on_peer_gone(st, peer); // its own word or the boss's
      },
      [self](tick_atom, std::uint64_t seq) { // its own deadline only
        auto& st = self->state;
        if (self->current_sender() == self->ctrl() && st.policy
            && !st.finished_)
          st.policy->on_timeout(st, seq);
      },
  };
  // The core first: a policy cannot take over the core's messages.
  core = core.or_else(checkpoint_handlers(self)).or_else(join_handlers(self));
  if (!st.policy)
    return core;
  return core.or_else(st.policy->handlers(st));
}

} // namespace troupe::actors
