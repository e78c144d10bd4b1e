// ShadowSync by EASGD: the syncer's exchange with the center on the shards.

#include <cstring>
#include <limits>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "algos/shadow/detail/shadow_ops.hpp"

namespace troupe::algos::detail {

using namespace messages;

namespace {

/// S-EASGD: e_i = alpha (s_i - c); member i moves by -e_i, the center by
/// the sum of the e_i (pushed as the gradient -sum of a unit-rate step).
void easgd_apply(syncer_ptr self) {
  auto& st = self->state;
  auto n = params_of(st);
  auto alpha
      = static_cast<float>(shadow_alpha(st.config.opts, st.config.workers));
  std::vector<float> total(n, 0.0f), target(n);
  for (std::size_t i = 0; i < st.have.size(); ++i) {
    if (!st.have[i])
      continue;
    const auto& s = st.snapshots[i];
    for (std::size_t j = 0; j < n; ++j) {
      float e = alpha * (s[j] - st.center[j]);
      total[j] += e;
      target[j] = s[j] - e;
    }
    correct(self, i, target.data());
  }
  for (std::size_t k = 0; k < st.config.shards.size(); ++k) {
    auto& sh = st.config.shards[k];
    push_msg p;
    p.worker = shadow_syncer_ids + st.config.index;
    p.seq = st.round;
    p.version = st.versions[k];
    p.offset = sh.range.offset;
    p.samples = 1;
    std::vector<float> g(sh.range.size);
    for (std::size_t j = 0; j < g.size(); ++j)
      g[j] = -total[sh.range.offset + j];
    p.values = tensor{std::move(g)};
    auto bytes = wire_size(p);
    ++st.messages;
    st.bytes += bytes;
    st.probe->sent(actors::msg_type::push, bytes);
    self->send(sh.handle, std::move(p));
  }
  ++st.pushes;
  end_round(self);
}

} // namespace

void rebind_center(syncer_ptr self, std::uint32_t k, caf::actor& h) {
  auto& st = self->state;
  if (!from_owner(self)) {
    actors::detail::refuse(self,
                           "shadow syncer " + std::to_string(st.config.index),
                           "rebind", "the coordinator's node");
    return;
  }
  if (k >= st.config.shards.size() || !h)
    return;
  // The round under way (its fetch or push to the lost shard failed) ends
  // as it does; the next one fetches the restored center.
  st.config.shards[k].handle
      = caf::actor_cast<actors::parameter_shard_actor>(h);
  actors::detail::log().info("shadow syncer {}: shard {} restored, rounds go "
                             "on with it",
                             st.config.index, k);
  // A fetch of the center under way may wait on the lost shard until the
  // request timeout: the round ends now (its members uncorrected) and the
  // next one fetches from the restored shard.
  if (st.fetching_center) {
    st.fetching_center = false;
    end_round(self);
  }
  // A checkpoint's flush waiting on the lost shard is done: the restored
  // shard holds none of this syncer's pushes since that checkpoint.
  if (k < st.flush_waits.size() && st.flush_waits[k]) {
    auto wait = std::move(st.flush_waits[k]);
    st.flush_waits[k] = nullptr;
    wait();
  }
}

void fetch_center(syncer_ptr self) {
  auto& st = self->state;
  auto id = ++st.center_fetch;
  st.fetching_center = true;
  // Answers to a fetch abandoned at a rebind (below) are dropped.
  auto current = [self, id] {
    return self->state.fetching_center && self->state.center_fetch == id;
  };
  auto done = [self](bool failed) {
    self->state.fetching_center = false;
    if (failed)
      end_round(self);
    else
      easgd_apply(self);
  };
  auto pending = std::make_shared<std::size_t>(st.config.shards.size());
  auto failed = std::make_shared<bool>(false);
  for (std::size_t k = 0; k < st.config.shards.size(); ++k) {
    auto& sh = st.config.shards[k];
    fetch_msg f{std::numeric_limits<worker_id>::max(), sh.range.offset,
                sh.range.size, 0};
    st.probe->sent(actors::msg_type::fetch, wire_size(f));
    self->request(sh.handle, st.config.timeout, f)
        .then(
            [self, k, pending, failed, current, done](params_msg& p) {
              if (!current())
                return;
              auto& st = self->state;
              auto& r = st.config.shards[k].range;
              if (p.values.size() == r.size)
                p.values.copy_to(st.center.data() + r.offset);
              st.versions[k] = p.version;
              if (--*pending == 0)
                done(*failed);
            },
            [self, k, pending, failed, current, done](caf::error& err) {
              if (!current())
                return;
              actors::detail::log().warn(
                  "shadow syncer {}: shard {} did not answer: "
                  "{}",
                  self->state.config.index, k, self->system().render(err));
              *failed = true;
              if (--*pending == 0)
                done(true);
            });
  }
}

} // namespace troupe::algos::detail
