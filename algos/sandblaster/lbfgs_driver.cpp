// Sandblaster's driver: the L-BFGS iterations as rounds of vector commands
// to the shards and batch passes over the workers (algorithms.md §2).

#include "algos/sandblaster/detail/lbfgs_driver.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include <caf/all.hpp>

#include "actors/comm_policy.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"

namespace troupe::algos::detail {

using namespace messages;

namespace {

using vop = optim::vector_command::op;
using driver_ptr = lbfgs_driver_ptr;

/// A request of the driver failed: the run ends with the reason.
void fail(driver_ptr self, const caf::error& e) {
  auto what = "lbfgs: a request failed: " + self->system().render(e);
  actors::detail::log().error("{}", what);
  finish(self, "failed", what, false);
}

/// Sends (xs...) to every shard: `on_reply(k, answer...)` for shard k's
/// answer (may be empty), `done()` after the last one; a failed request ends
/// the run.
template <class... Rs, class... Ts>
void to_shards(
    driver_ptr self,
    typename std::common_type<std::function<void(std::size_t, Rs&...)>>::type
        on_reply,
    std::function<void()> done, Ts... xs) {
  auto& st = self->state;
  auto left = std::make_shared<std::size_t>(st.shards.size());
  // The run ended (a failure) or rolled back to a checkpoint while this was
  // under way: its answers are ignored.
  auto gone = outdated(self);
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    self->request(st.shards[k], st.job->request_timeout, xs...)
        .then(
            [gone, k, left, on_reply, done](Rs&... r) {
              if (gone())
                return;
              if (on_reply)
                on_reply(k, r...);
              if (--*left == 0)
                done();
            },
            [self, gone](caf::error& e) {
              if (!gone())
                fail(self, e);
            });
}

/// Runs a command on every shard; `k` gets the sum of the answers (shard
/// order, so the sum is reproducible).
void all(driver_ptr self, optim::vector_command c,
         std::function<void(double)> k) {
  auto parts
      = std::make_shared<std::vector<double>>(self->state.shards.size(), 0.0);
  to_shards<real>(
      self, [parts](std::size_t i, real& r) { (*parts)[i] = r.value; },
      [parts, k] {
        double sum = 0;
        for (auto v : *parts)
          sum += v;
        k(sum);
      },
      lbfgs_vec_msg{static_cast<std::uint8_t>(c.kind), c.a, c.b,
                    real{c.alpha}});
}

} // namespace

namespace {

void start_pass(driver_ptr self, double t, std::function<void(double)> k) {
  auto& st = self->state;
  ++st.pass;
  st.table.reset();
  to_shards<ack_atom>(
      self, {},
      [self, k] {
        auto& st = self->state;
        st.table.emplace(st.job->portions, st.job->backups);
        st.losses.assign(st.job->portions, 0.0);
        st.samples.assign(st.job->portions, 0);
        st.pass_done = k;
        for (std::size_t w = 0; w < st.workers.size(); ++w)
          give(self, w);
      },
      point_atom::value, st.pass, real{t});
}

void end_pass(driver_ptr self) {
  auto& st = self->state;
  actors::detail::log().debug("lbfgs: pass {} done", st.pass);
  st.counted += st.table->completed();
  st.duplicates += st.table->duplicates();
  st.backups += st.table->backups();
  st.reissued += st.table->reissued();
  for (auto n : st.samples)
    st.evaluated += n;
  // T2 at run time: every shard holds each portion once; one that refused
  // a portion (a malformed or non-finite slice) would leave a hole.
  auto short_of = std::make_shared<std::optional<std::size_t>>();
  to_shards<std::uint64_t>(
      self,
      [self, short_of](std::size_t k, std::uint64_t& counted) {
        if (counted != self->state.job->portions && !*short_of)
          *short_of = k;
      },
      [self, short_of] {
        auto& st = self->state;
        if (*short_of) {
          finish(self, "failed",
                 "lbfgs: shard " + std::to_string(**short_of)
                     + " is missing portions of pass " + std::to_string(st.pass)
                     + " (it refused a malformed or non-finite gradient "
                       "slice)");
          return;
        }
        double loss = 0;
        std::uint64_t n = 0;
        for (std::size_t p = 0; p < st.losses.size(); ++p)
          loss += st.losses[p], n += st.samples[p]; // portion order
        auto k = std::move(st.pass_done);
        k(n > 0 ? loss / static_cast<double>(n) : 0.0);
      },
      sum_atom::value, st.pass);
}

void iterate(driver_ptr self);

void run_machine(driver_ptr self, std::function<void()> k) {
  auto& st = self->state;
  auto c = st.machine->next();
  if (c.kind == vop::done) {
    k();
    return;
  }
  all(self, c, [self, c, k](double r) {
    if (c.kind == vop::dot)
      self->state.machine->result(r);
    run_machine(self, k);
  });
}

void accept_step(driver_ptr self, double ft) {
  auto& st = self->state;
  auto pos = st.h.next_position();
  // Per shard, summed in shard order once all answered (reproducible).
  auto parts
      = std::make_shared<std::vector<std::vector<real>>>(st.shards.size());
  to_shards<std::vector<real>>(
      self, [parts](std::size_t k, std::vector<real>& r) { (*parts)[k] = r; },
      [self, parts, pos, ft] {
        auto& st = self->state;
        double dots[3] = {0, 0, 0};
        for (auto& r : *parts)
          for (std::size_t i = 0; i < 3 && i < r.size(); ++i)
            dots[i] += r[i].value;
        st.fx = ft;
        ++st.iterations;
        if (!st.h.push(dots[0], dots[1], dots[2])) {
          ++st.rejected;
          iterate(self);
          return;
        }
        to_shards<ack_atom>(
            self, {}, [self] { iterate(self); }, keep_atom::value, pos);
      },
      accept_atom::value);
}

void trial(driver_ptr self) {
  auto& st = self->state;
  const auto& o = st.job->options;
  if (st.ls++ >= o.max_line_search) {
    // As the serial reference: the point stays where it is (at the limit of
    // the precision, no step decreases f enough).
    finish(self, "the line search found no step at iteration "
                     + std::to_string(st.iterations) + " (after "
                     + std::to_string(o.max_line_search) + " trials)");
    return;
  }
  start_pass(self, st.step, [self](double ft) {
    auto trial_g = slot_trial_gradient(self->state.job->options.memory);
    all(self, {vop::dot, trial_g, optim::slot_d, 0}, [self, ft](double ds) {
      auto& st = self->state;
      const auto& o = st.job->options;
      if (!(ft <= st.fx + o.c1 * st.step * st.slope))
        st.hi = st.step;
      else if (ds < o.c2 * st.slope)
        st.lo = st.step;
      else {
        accept_step(self, ft);
        return;
      }
      st.step = std::isinf(st.hi) ? 2 * st.lo : (st.lo + st.hi) / 2;
      trial(self);
    });
  });
}

/// Starts the line search along d, whose slope is g.d < 0.
void search(driver_ptr self, double slope) {
  auto& st = self->state;
  if (st.probe)
    st.probe->activity("line search");
  st.slope = slope;
  st.lo = 0;
  st.hi = std::numeric_limits<double>::infinity();
  st.step = 1;
  st.ls = 0;
  trial(self);
}

/// An iteration from its boundary: the gradient norm, the stop tests, the
/// direction, the line search.
void step(driver_ptr self) {
  all(self, {vop::dot, optim::slot_g, optim::slot_g, 0}, [self](double gg) {
    auto& st = self->state;
    const auto& o = st.job->options;
    st.gnorm = std::sqrt(gg);
    auto t = elapsed(self);
    st.trace.push_back({{"iteration", st.iterations},
                        {"passes", st.pass},
                        {"seconds", t},
                        {"f", st.fx},
                        {"gradient_norm", st.gnorm}});
    report_iteration(self, t);
    if (st.gnorm < o.gradient_tolerance) {
      finish(self, "converged: the gradient norm is below "
                       + nlohmann::json(o.gradient_tolerance).dump());
      return;
    }
    if (st.iterations >= o.max_iterations) {
      finish(self, "iteration limit (" + std::to_string(o.max_iterations)
                       + ") reached");
      return;
    }
    if (st.stopping) { // a signal, the time limit (checkpointed before)
      finish(self, *st.stopping);
      return;
    }
    st.machine = std::make_shared<optim::two_loop>(st.h);
    if (st.probe)
      st.probe->activity("two-loop recursion");
    run_machine(self, [self] {
      all(self, {vop::dot, optim::slot_g, optim::slot_d, 0},
          [self](double slope) {
            if (slope < 0) {
              search(self, slope);
              return;
            }
            // Not a descent direction: as the serial reference, forget the
            // history and restart from d = -g.
            auto& st = self->state;
            st.h.ring.clear();
            st.h.rho.clear();
            all(self, {vop::copy, optim::slot_g, optim::slot_d, 0},
                [self](double) {
                  all(self, {vop::scale, optim::slot_d, 0, -1.0},
                      [self](double) {
                        all(self, {vop::dot, optim::slot_g, optim::slot_d, 0},
                            [self](double slope) { search(self, slope); });
                      });
                });
          });
    });
  });
}

void iterate(driver_ptr self) {
  boundary(self, [self] { step(self); });
}

} // namespace

void go_on(driver_ptr self) {
  iterate(self);
}

caf::behavior lbfgs_driver(caf::stateful_actor<lbfgs_driver_state>* self,
                           std::shared_ptr<const lbfgs_job> job,
                           actors::placement_plan where) {
  auto& st = self->state;
  st.job = std::move(job);
  st.where = std::move(where);
  st.h.memory = st.job->options.memory;
  st.ranges = st.job->ranges();
  st.probe = actors::make_probe(self, "lbfgs driver", "coordinator", true);
  self->set_down_handler([self](caf::down_msg& msg) { role_down(self, msg); });
  if (st.job->stop && st.job->stop->attach(caf::actor_cast<caf::actor>(self)))
    request_stop(self); // asked before the driver ran
  self->attach_functor([stop = st.job->stop] {
    if (stop)
      stop->detach();
  });
  return {
      [self](result_atom) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, actors::msg_type::result,
                                actors::small_message_bytes);
        st.result = self->make_response_promise();
        st.started = actors::now(self);
        st.checkpoint_time = st.started;
        place_roles(self, [self] {
          if (self->state.job->resume) {
            restore(self, [self] { iterate(self); });
            return;
          }
          start_pass(self, 0.0, [self](double f) {
            self->state.fx = f;
            // g = grad f(x0); the pair formed on the way is not kept.
            to_shards<std::vector<real>>(
                self, {}, [self] { iterate(self); }, accept_atom::value);
          });
        });
        return st.result;
      },
      [self](stop_atom) {
        // From the stop request (stop_request.hpp), sent as the driver.
        if (actors::detail::from_here(self))
          request_stop(self);
        else
          actors::detail::refuse(self, "the lbfgs driver", "stop",
                                 "this process");
      },
      [self](stop_atom, std::uint64_t iteration) {
        stop_timeout(self, iteration);
      },
      [self](tick_atom, std::uint32_t w, std::uint64_t serial) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, actors::msg_type::other,
                                actors::small_message_bytes);
        if (st.finished || w >= st.workers.size() || !st.live[w] || !st.busy[w]
            || st.assignment[w] != serial)
          return; // answered in time
        actors::detail::log().warn(
            "lbfgs: worker {} did not answer within the request "
            "timeout; given up",
            w);
        self->send_exit(st.workers[w], caf::exit_reason::user_shutdown);
        lose_worker(self, w);
      },
      [self](const lbfgs_done_msg& m) {
        auto w = m.worker;
        auto pass = m.pass;
        auto portion = m.portion;
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, actors::msg_type::done,
                                actors::small_message_bytes);
        if (w >= st.workers.size() || st.finished || pass <= st.forgotten)
          return; // (a pass of before a roll-back: busy was reset then)
        st.busy[w] = false;
        ++st.results[w];
        if (pass != st.pass || !st.table) {
          give(self, w); // a late result of an earlier pass: back to work
          return;
        }
        if (st.table->complete(portion, w)) {
          if (st.probe)
            st.probe->progress(); // a pass is progress too (one can be long)
          st.losses[portion] = m.loss.value;
          st.samples[portion] = m.samples;
          // The pass ends once, on its last first result (a backup's twin
          // arriving later must not end it again).
          if (st.table->done()) {
            end_pass(self);
            return;
          }
        }
        for (std::size_t v = 0; v < st.workers.size(); ++v)
          give(self, v);
      },
  };
}

} // namespace troupe::algos::detail
