#include "actors/lbfgs_driver.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include <caf/all.hpp>

#include "actors/detail/lbfgs_worker.hpp"
#include "actors/detail/log.hpp"
#include "actors/lbfgs_shard.hpp"
#include "messages/registry.hpp"
#include "optim/portions.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

using vop = optim::vector_command::op;

struct driver_state {
  const lbfgs_job* job = nullptr;
  std::vector<lbfgs_shard_actor> shards;
  std::vector<optim::slice> ranges;
  std::vector<caf::actor> workers;
  std::vector<bool> live, busy;
  std::vector<std::uint64_t> results; ///< per worker, counted or not
  optim::lbfgs_history h;
  std::optional<optim::portion_table> table;
  std::vector<double> losses;
  std::vector<std::uint64_t> samples;
  std::function<void(double)> pass_done;
  std::uint64_t pass = 0, counted = 0, duplicates = 0, backups = 0,
                reissued = 0, lost = 0, rejected = 0;
  std::size_t iterations = 0, ls = 0;
  double fx = 0, slope = 0, lo = 0, hi = 0, step = 1, gnorm = 0;
  std::shared_ptr<optim::two_loop> machine;
  caf::response_promise result;
  std::optional<std::string> error;
};

using driver_ptr = caf::stateful_actor<driver_state>*;

/// A request of the driver failed: the run ends with the reason.
void fail(driver_ptr self, const caf::error& e) {
  auto what = "lbfgs: a request failed: " + self->system().render(e);
  detail::log().error("{}", what);
  if (self->state.result.pending())
    self->state.result.deliver(nlohmann::json{{"error", what}}.dump());
  self->quit(e);
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
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    self->request(st.shards[k], st.job->request_timeout, xs...)
        .then(
            [k, left, on_reply, done](Rs&... r) {
              if (on_reply)
                on_reply(k, r...);
              if (--*left == 0)
                done();
            },
            [self](caf::error& e) { fail(self, e); });
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
      vec_atom::value, static_cast<std::uint8_t>(c.kind), c.a, c.b,
      real{c.alpha});
}

void finish(driver_ptr self, std::optional<std::string> error = {});

void give(driver_ptr self, std::size_t w) {
  auto& st = self->state;
  if (!st.table || st.table->done() || !st.live[w] || st.busy[w])
    return;
  if (auto p = st.table->assign(static_cast<std::uint32_t>(w))) {
    detail::log().debug("lbfgs: pass {} portion {} to worker {}", st.pass, *p,
                        w);
    st.busy[w] = true;
    self->send(st.workers[w], grad_atom::value, st.pass,
               static_cast<std::uint64_t>(*p));
  }
}

void start_pass(driver_ptr self, double t, std::function<void(double)> k) {
  auto& st = self->state;
  ++st.pass;
  st.table.reset();
  to_shards<ack_atom>(
      self, {},
      [self, k] {
        auto& st = self->state;
        st.table.emplace(st.job->portions);
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
  detail::log().debug("lbfgs: pass {} done", st.pass);
  st.counted += st.table->completed();
  st.duplicates += st.table->duplicates();
  st.backups += st.table->backups();
  st.reissued += st.table->reissued();
  to_shards<std::uint64_t>(
      self, {},
      [self] {
        auto& st = self->state;
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
    finish(self,
           "line search failed at iteration " + std::to_string(st.iterations));
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

void iterate(driver_ptr self) {
  auto& st = self->state;
  all(self, {vop::dot, optim::slot_g, optim::slot_g, 0}, [self](double gg) {
    auto& st = self->state;
    const auto& o = st.job->options;
    st.gnorm = std::sqrt(gg);
    if (st.iterations >= o.max_iterations || st.gnorm < o.gradient_tolerance) {
      finish(self);
      return;
    }
    st.machine = std::make_shared<optim::two_loop>(st.h);
    run_machine(self, [self] {
      all(self, {vop::dot, optim::slot_g, optim::slot_d, 0},
          [self](double slope) {
            auto& st = self->state;
            if (!(slope < 0)) {
              finish(self, "not a descent direction");
              return;
            }
            st.slope = slope;
            st.lo = 0;
            st.hi = std::numeric_limits<double>::infinity();
            st.step = 1;
            st.ls = 0;
            trial(self);
          });
    });
  });
  (void)st;
}

void finish(driver_ptr self, std::optional<std::string> error) {
  auto& st = self->state;
  auto x = std::make_shared<std::vector<double>>(st.job->init->size(), 0.0);
  to_shards<std::uint64_t, std::string>(
      self,
      [self, x](std::size_t k, std::uint64_t&, std::string& raw) {
        auto v = unpack_doubles(raw);
        std::copy(
            v.begin(), v.end(),
            x->begin()
                + static_cast<std::ptrdiff_t>(self->state.ranges[k].offset));
      },
      [self, x, error] {
        auto& st = self->state;
        nlohmann::json out{{"x", *x},
                           {"iterations", st.iterations},
                           {"passes", st.pass},
                           {"f", st.fx},
                           {"gradient_norm", st.gnorm},
                           {"portions_counted", st.counted},
                           {"duplicates_discarded", st.duplicates},
                           {"backups", st.backups},
                           {"reissued", st.reissued},
                           {"lost_workers", st.lost},
                           {"pairs_rejected", st.rejected},
                           {"results_by_worker", st.results}};
        if (error)
          out["error"] = *error;
        st.result.deliver(out.dump());
        for (auto& w : st.workers)
          self->send_exit(w, caf::exit_reason::user_shutdown);
        for (auto& s : st.shards)
          self->send_exit(s, caf::exit_reason::user_shutdown);
        self->quit();
      },
      point_atom::value);
}

caf::behavior lbfgs_driver(caf::stateful_actor<driver_state>* self,
                           const lbfgs_job* job) {
  auto& st = self->state;
  st.job = job;
  st.h.memory = job->options.memory;
  st.ranges = optim::balanced_split(job->init->size(), job->shards);
  for (std::uint32_t i = 0; i < job->shards; ++i)
    st.shards.push_back(
        self->spawn(lbfgs_shard, lbfgs_shard_config{i, st.ranges[i], job->init,
                                                    job->options.memory}));
  for (std::uint32_t w = 0; w < job->workers; ++w) {
    st.workers.push_back(self->spawn(detail::lbfgs_worker, w,
                                     caf::actor_cast<caf::actor>(self),
                                     st.shards, st.ranges, job));
    self->monitor(st.workers.back());
  }
  st.live.assign(job->workers, true);
  st.busy.assign(job->workers, false);
  st.results.assign(job->workers, 0);
  // A lost worker: its portions go back to the pool for the others.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (std::size_t w = 0; w < st.workers.size(); ++w)
      if (st.live[w] && st.workers[w].address() == msg.source) {
        st.live[w] = false;
        st.busy[w] = false;
        ++st.lost;
        detail::log().warn("lbfgs: worker {} lost; its portions re-issued", w);
        if (st.table)
          st.table->lose(static_cast<std::uint32_t>(w));
        if (std::find(st.live.begin(), st.live.end(), true) == st.live.end()) {
          finish(self, "every worker was lost");
          return;
        }
        for (std::size_t v = 0; v < st.workers.size(); ++v)
          give(self, v);
      }
  });
  return {
      [self](result_atom) {
        auto& st = self->state;
        st.result = self->make_response_promise();
        start_pass(self, 0.0, [self](double f) {
          self->state.fx = f;
          // g = grad f(x0); the pair formed on the way is not kept.
          to_shards<std::vector<real>>(
              self, {}, [self] { iterate(self); }, accept_atom::value);
        });
        return st.result;
      },
      [self](done_atom, std::uint32_t w, std::uint64_t pass,
             std::uint64_t portion, real loss, std::uint64_t samples) {
        auto& st = self->state;
        if (w >= st.workers.size())
          return;
        st.busy[w] = false;
        ++st.results[w];
        if (pass != st.pass || !st.table) {
          give(self, w); // a late result of an earlier pass: back to work
          return;
        }
        if (st.table->complete(portion, w)) {
          st.losses[portion] = loss.value;
          st.samples[portion] = samples;
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

} // namespace

nlohmann::json run_lbfgs(const lbfgs_job& job) {
  if (!job.init || job.init->empty() || job.shards == 0 || job.workers == 0
      || job.portions == 0 || !job.compute)
    return {{"error", "lbfgs: needs parameters, shards, workers, portions "
                      "and a portion function"}};
  caf::actor_system_config cfg;
  messages::register_types(cfg);
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto driver = sys.spawn(lbfgs_driver, &job);
  nlohmann::json out;
  self->request(driver, std::chrono::minutes{10}, result_atom::value)
      .receive([&](std::string& text) { out = nlohmann::json::parse(text); },
               [&](caf::error& e) {
                 out = {{"error", "lbfgs: " + sys.render(e)}};
               });
  return out;
}

} // namespace troupe::actors
