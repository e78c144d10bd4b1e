#include "algos/sandblaster/detail/lbfgs_worker.hpp"

#include <stdexcept>

#include <caf/all.hpp>

#include "actors/clock.hpp"
#include "actors/comm_policy.hpp"
#include "actors/detail/log.hpp"
#include "messages/errors.hpp"

namespace troupe::algos::detail {

using namespace messages;

/// Takes (grad, pass, portion) from the driver: reads the point once per
/// pass, computes the portion, sends each shard its slice of the gradient
/// sum, and reports (done, worker, pass, portion, loss sum, samples).
caf::behavior lbfgs_worker(caf::stateful_actor<lbfgs_worker_state>* self,
                           std::uint32_t id, caf::actor driver,
                           std::vector<lbfgs_shard_actor> shards,
                           std::vector<optim::slice> ranges,
                           std::shared_ptr<const lbfgs_job> job) {
  auto& st = self->state;
  st.id = id;
  st.driver = std::move(driver);
  st.shards = std::move(shards);
  st.ranges = std::move(ranges);
  st.job = std::move(job);
  st.compute = st.job->make_compute ? st.job->make_compute() : st.job->compute;
  st.x.assign(st.job->init->size(), 0.0);
  st.grad.assign(st.job->init->size(), 0.0);
  st.probe = actors::make_probe(self, "lbfgs worker " + std::to_string(id),
                                "worker", true);
  // A shard request failed (its node may be lost): the driver may restore
  // the shard and roll back (a rebind); else the worker ends with the error
  // after one request timeout.
  auto failed = [self](std::uint64_t epoch, caf::error& e) {
    auto& st = self->state;
    if (st.epoch != epoch || st.failed)
      return;
    st.failed = std::move(e);
    self->delayed_send(self, actors::to_chrono(st.job->request_timeout),
                       tick_atom::value, epoch);
  };
  auto compute = [self, failed](std::uint64_t pass, std::uint64_t portion) {
    auto& st = self->state;
    auto& job = *st.job;
    if (st.id < job.die_after.size() && job.die_after[st.id] > 0
        && st.done + 1 >= job.die_after[st.id]) {
      self->quit(caf::exit_reason::kill); // a replica that dies mid-pass
      return;
    }
    if (st.id < job.delays.size())
      actors::spend(self, job.delays[st.id]);
    std::uint64_t samples = 0;
    double loss = 0;
    if (st.probe)
      st.probe->activity("computing a portion");
    auto t0 = actors::now(self);
    try {
      loss = st.compute(st.x.data(), st.x.size(), portion, st.grad.data(),
                        samples);
    } catch (const std::exception& e) {
      // A non-finite loss or a broken portion: the worker leaves (its
      // portions go to the others) and says why.
      actors::detail::log().error("lbfgs worker {}: portion {}: {}", st.id,
                                  portion, e.what());
      auto code = dynamic_cast<const std::domain_error*>(&e) != nullptr
                      ? messages::errc::diverged
                      : messages::errc::worker_failed;
      self->quit(messages::make_error(code, e.what()));
      return;
    }
    actors::did_work(self, actors::work_kind::step, samples);
    if (st.id < job.slowdown.size() && job.slowdown[st.id] > 1)
      actors::spend(self,
                    std::chrono::duration_cast<std::chrono::nanoseconds>(
                        (actors::now(self) - t0) * (job.slowdown[st.id] - 1)));
    auto left = std::make_shared<std::size_t>(st.shards.size());
    for (std::size_t k = 0; k < st.shards.size(); ++k)
      self->request(
              st.shards[k], job.request_timeout,
              lbfgs_grad_msg{pass, portion, samples,
                             pack_doubles(st.grad.data() + st.ranges[k].offset,
                                          st.ranges[k].size)})
          .then(
              [self, left, pass, portion, loss, samples,
               epoch = st.epoch](bool) {
                auto& st = self->state;
                if (--*left > 0 || st.epoch != epoch)
                  return; // (a roll-back since: the driver forgot it)
                ++st.done;
                if (st.probe) {
                  st.probe->progress();
                  st.probe->gauge("portions", static_cast<double>(st.done));
                  st.probe->activity("waiting for a portion");
                }
                self->send(st.driver, lbfgs_done_msg{st.id, pass, portion,
                                                     real{loss}, samples});
              },
              [failed, epoch = st.epoch](caf::error& e) { failed(epoch, e); });
  };
  return {
      [self](rebind_atom, std::uint32_t k, caf::actor& h) {
        auto& st = self->state;
        if (!h || k >= st.shards.size()
            || caf::actor_cast<caf::actor_addr>(self->current_sender())
                   != st.driver.address()) {
          actors::detail::log().warn("lbfgs worker {}: a rebind not from its "
                                     "driver ignored",
                                     st.id);
          return;
        }
        st.shards[k] = caf::actor_cast<lbfgs_shard_actor>(h);
        ++st.epoch;
        st.failed = caf::error{};
        st.pass = 0; // the point is read again
      },
      [self](tick_atom, std::uint64_t epoch) {
        auto& st = self->state;
        if (caf::actor_cast<caf::actor_addr>(self->current_sender())
                == self->address()
            && st.epoch == epoch && st.failed)
          self->quit(st.failed);
      },
      [self, compute, failed](grad_atom, std::uint64_t pass,
                              std::uint64_t portion) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, actors::msg_type::step,
                                actors::small_message_bytes);
        if (pass == st.pass) {
          compute(pass, portion);
          return;
        }
        auto left = std::make_shared<std::size_t>(st.shards.size());
        for (std::size_t k = 0; k < st.shards.size(); ++k)
          self->request(st.shards[k], st.job->request_timeout,
                        point_atom::value)
              .then(
                  [self, k, left, pass, portion, compute,
                   epoch = st.epoch](const lbfgs_point_msg& point) {
                    auto& st = self->state;
                    if (st.epoch != epoch)
                      return; // a point of before a roll-back
                    auto v = unpack_doubles(point.values);
                    std::copy(
                        v.begin(), v.end(),
                        st.x.begin()
                            + static_cast<std::ptrdiff_t>(st.ranges[k].offset));
                    if (--*left == 0) {
                      st.pass = pass;
                      compute(pass, portion);
                    }
                  },
                  [failed, epoch = st.epoch](caf::error& e) {
                    failed(epoch, e);
                  });
      },
  };
}

} // namespace troupe::algos::detail
