#include "actors/evaluator.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include <caf/actor_cast.hpp>

#include "actors/clock.hpp"
#include "actors/detail/caller.hpp"
#include "messages/errors.hpp"
#include "optim/param_hash.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

using self_ptr = evaluator_actor::stateful_pointer<evaluator_state>;

eval_msg evaluate_now(self_ptr self) {
  auto& st = self->state;
  eval_msg out;
  out.version = st.version;
  out.param_hash = optim::hash_params(st.params.data(), st.params.size());
  if (st.config.last_params)
    *st.config.last_params = st.params;
  if (st.config.evaluate) {
    auto e = st.config.evaluate(st.params.data(), st.params.size());
    out.loss = real{e.loss};
    out.accuracy = real{e.accuracy};
    out.samples = e.samples;
    did_work(self, work_kind::forward, e.samples);
  }
  return out;
}

/// The mean of the `average` actors' vectors, then evaluated; actors that
/// fail to answer are left out. The answers are summed in double in the
/// order of `average` (the workers' order), not in the order they arrive,
/// so that the same models give the same mean bit for bit. Each call keeps
/// its answers to itself: an evaluation that starts while another waits on
/// a lost worker does not disturb it.
void evaluate_average(self_ptr self,
                      caf::typed_response_promise<eval_msg> promise) {
  auto& st = self->state;
  auto n = st.config.parameters;
  struct gather {
    std::vector<messages::tensor> answers; ///< by index in `average`
    std::uint64_t version = 0;             ///< the sum of their step counts
    std::size_t remaining = 0;
  };
  auto g = std::make_shared<gather>();
  g->answers.resize(st.config.average.size());
  g->remaining
      = std::count_if(st.config.average.begin(), st.config.average.end(),
                      [](const caf::actor& a) { return static_cast<bool>(a); });
  if (g->remaining == 0) {
    promise.deliver(make_error(errc::role_lost, "every worker was lost"));
    return;
  }
  auto finish = [self, promise, n, g]() mutable {
    auto& st = self->state;
    st.sum.assign(n, 0.0);
    std::size_t averaged = 0;
    for (auto& a : g->answers) {
      if (a.size() != n)
        continue; // lost, failed or malformed
      const float* v = a.data();
      for (std::size_t i = 0; i < n; ++i)
        st.sum[i] += v[i];
      ++averaged;
    }
    g->answers.clear();
    if (averaged == 0) {
      promise.deliver(
          make_error(errc::role_lost, "no worker answered the evaluator"));
      return;
    }
    for (std::size_t i = 0; i < n; ++i)
      st.params[i]
          = static_cast<float>(st.sum[i] / static_cast<double>(averaged));
    st.version = g->version;
    st.probe->activity("evaluating");
    promise.deliver(evaluate_now(self));
    st.probe->activity("idle");
  };
  fetch_msg f;
  f.worker = std::numeric_limits<worker_id>::max();
  f.size = n;
  for (std::size_t k = 0; k < st.config.average.size(); ++k) {
    auto& h = st.config.average[k];
    if (!h)
      continue; // lost
    st.probe->sent(msg_type::fetch, wire_size(f));
    self->request(h, st.config.request_timeout, f)
        .then(
            [self, g, finish, n, k](params_msg& p) mutable {
              auto scope = on_message(self->state.probe.get(), self,
                                      msg_type::params, wire_size(p));
              if (p.values.size() == n) {
                g->answers[k] = std::move(p.values);
                g->version += p.version;
              }
              if (--g->remaining == 0)
                finish();
            },
            [g, finish](caf::error&) mutable {
              if (--g->remaining == 0)
                finish();
            });
  }
}

} // namespace

evaluator_actor::behavior_type evaluator(self_ptr self,
                                         evaluator_config config) {
  self->state.params.assign(config.parameters, 0.0f);
  self->state.config = std::move(config);
  self->state.probe = make_probe(self, "evaluator", "evaluator", false);
  self->state.probe->activity("idle");
  return {
      [self](eval_atom, bool refetch) -> caf::result<eval_msg> {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::eval,
                                small_message_bytes);
        st.probe->activity(refetch ? "fetching" : "evaluating");
        if (!refetch) {
          auto out = evaluate_now(self);
          st.probe->activity("idle");
          return out;
        }
        auto promise = self->make_response_promise<eval_msg>();
        if (!st.config.average.empty()) {
          evaluate_average(self, promise);
          return promise;
        }
        std::vector<std::pair<caf::actor, optim::slice>> sources;
        if (st.config.source)
          sources.emplace_back(st.config.source,
                               optim::slice{0, st.config.parameters});
        else
          for (auto& shard : st.config.shards)
            sources.emplace_back(caf::actor_cast<caf::actor>(shard.handle),
                                 shard.range);
        auto remaining = std::make_shared<std::size_t>(sources.size());
        auto version = std::make_shared<std::uint64_t>(0);
        for (auto& [handle, range] : sources) {
          fetch_msg f;
          f.worker = std::numeric_limits<worker_id>::max();
          f.offset = range.offset;
          f.size = range.size;
          st.probe->sent(msg_type::fetch, wire_size(f));
          self->request(handle, st.config.request_timeout, f)
              .then(
                  [self, promise, remaining, version,
                   range = range](params_msg& p) mutable {
                    auto& st = self->state;
                    auto scope = on_message(st.probe.get(), self,
                                            msg_type::params, wire_size(p));
                    if (p.values.size() == range.size)
                      p.values.copy_to(st.params.data() + range.offset);
                    *version += p.version;
                    if (--*remaining == 0) {
                      st.version = *version;
                      st.probe->activity("evaluating");
                      promise.deliver(evaluate_now(self));
                      st.probe->activity("idle");
                    }
                  },
                  [self, promise](caf::error& err) mutable {
                    self->state.probe->error();
                    promise.deliver(std::move(err));
                  });
        }
        return promise;
      },
      [self](leave_atom, worker_id w) {
        auto& st = self->state;
        if (w < st.config.average.size())
          st.config.average[w] = nullptr;
      },
      [self](rebind_atom, std::uint32_t i, parameter_shard_actor& h) {
        auto& st = self->state;
        if (detail::from_here(self) && i < st.config.shards.size())
          st.config.shards[i].handle = std::move(h);
      },
  };
}

} // namespace troupe::actors
