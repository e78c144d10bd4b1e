#include "actors/detail/shard_replica.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>

#include "actors/checkpoint_state.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "messages/errors.hpp"
#include "messages/shm.hpp"

namespace troupe::actors::detail {

using namespace messages;

namespace {

std::string name_of(const parameter_shard_state& st) {
  return "shard " + std::to_string(st.config.index);
}

constexpr std::uint32_t flush_every_pushes = 32;
constexpr std::uint64_t flush_every_bytes = 4 << 20;

template <class Msg>
void forward_msg(shard_self self, Msg&& m) {
  auto& st = self->state;
  if (!st.backup)
    return;
  ++st.forwarded;
  ++st.pushes_since_flush;
  st.bytes_since_flush += wire_size(m);
  self->send(st.backup, replicate_atom::value, std::forward<Msg>(m));
  if (st.pushes_since_flush < flush_every_pushes
      && st.bytes_since_flush < flush_every_bytes)
    return;
  st.pushes_since_flush = 0;
  st.bytes_since_flush = 0;
  ++st.unacked;
  auto answered = [self, epoch = st.backup_epoch] {
    auto& st = self->state;
    if (st.backup_epoch != epoch || st.unacked == 0)
      return;
    --st.unacked;
    serve_waiting(st);
  };
  // Within half the request timeout: a fetch held meanwhile must not time
  // out at its worker. A backup that does not answer is lost (its node's
  // heartbeats tell the coordinator, which detaches it).
  auto timeout = st.config.request_timeout;
  if (timeout.valid())
    timeout.count = std::max<std::uint64_t>(timeout.count / 2, 1);
  self->request(st.backup, timeout, flush_atom::value)
      .then([answered](std::uint64_t) { answered(); },
            [answered](caf::error&) { answered(); });
}

} // namespace

bool from_owner(shard_self self) {
  return from_here(self)
         || (self->state.config.owner
             && from_node(self, self->state.config.owner));
}

bool from_primary(shard_self self, const char* what) {
  auto& st = self->state;
  const auto& sender = self->current_sender();
  if (st.config.primary && sender
      && caf::actor_cast<caf::actor_addr>(sender) == st.config.primary)
    return true;
  ++st.refused;
  refuse(self, name_of(st), what, "its primary");
  return false;
}

void note_direct(shard_self self) {
  auto& st = self->state;
  if (!st.config.primary || st.serving)
    return;
  st.serving = true;
  if (st.probe)
    st.probe->activity("serving");
  log().info("{}: first push straight from a worker: the backup serves in "
             "its primary's place (version {})",
             name_of(st), st.store->version());
}

void forward(shard_self self, push_msg&& p) {
  // The worker marked the values for this shard's node (or for the node of
  // a primary it pushed to before, for a push sent again): through shared
  // memory, they go to the backup's node only if marked for it.
  const auto& backup = self->state.backup;
  p.values.share_with(backup && backup.node() != self->node()
                          ? shm::channel_to(backup.node())
                          : nullptr);
  forward_msg(self, std::move(p));
}

void forward(shard_self self, compressed_push_msg&& c) {
  forward_msg(self, std::move(c));
}

caf::result<bool> attach_backup(shard_self self, caf::actor backup) {
  auto& st = self->state;
  auto name = name_of(st);
  if (!from_owner(self))
    return refuse(self, name, "replicate", "the coordinator's node");
  if (st.config.mode != shard_mode::async || st.config.staleness_bound)
    return make_error(errc::bad_request,
                      name
                          + ": only an asynchronous shard without a "
                            "staleness bound has a hot backup");
  // Null: detached (the backup was lost).
  st.backup = caf::actor_cast<parameter_shard_actor>(std::move(backup));
  ++st.backup_epoch;
  st.unacked = 0;
  st.pushes_since_flush = 0;
  st.bytes_since_flush = 0;
  serve_waiting(st);
  if (!st.backup)
    return true;
  // The state first, then every push: the backup sees them in this order.
  auto promise = self->make_response_promise<bool>();
  self->request(st.backup, st.config.request_timeout, replicate_atom::value,
                save_shard(st))
      .then([promise](bool) mutable { promise.deliver(true); },
            [self, promise, name](caf::error& err) mutable {
              self->state.backup = parameter_shard_actor{};
              promise.deliver(make_error(errc::bad_request,
                                         name
                                             + ": its backup did not take "
                                               "its state: "
                                             + self->system().render(err)));
            });
  return promise;
}

caf::result<bool> take_primary_state(shard_self self,
                                     const std::string& state) {
  auto& st = self->state;
  if (!from_primary(self, "replicate"))
    return make_error(errc::not_allowed,
                      name_of(st) + ": a state from another than its primary");
  try {
    load_shard(st, state, "the primary's state of " + name_of(st));
  } catch (const std::exception& e) {
    return make_error(errc::bad_request, e.what());
  }
  st.awaiting_first_push = false;
  log().info("{}: hot backup in step with its primary (version {})",
             name_of(st), st.store->version());
  return true;
}

caf::result<shard_stats> stats_after_backup(
    shard_self self,
    const std::function<shard_stats(const parameter_shard_state&)>&
        make_stats) {
  auto& st = self->state;
  auto mine = make_stats(st);
  if (!st.backup)
    return mine;
  // One sender's messages arrive in order: the backup answers after every
  // push forwarded before, so its figures match these, taken now.
  auto promise = self->make_response_promise<shard_stats>();
  self->request(st.backup, st.config.request_timeout, stats_atom::value)
      .then(
          [promise, mine](shard_stats& b) mutable {
            mine.backup_version = b.version;
            mine.backup_hash = b.params_hash;
            promise.deliver(mine);
          },
          [promise, mine](caf::error&) mutable { promise.deliver(mine); });
  return promise;
}

} // namespace troupe::actors::detail
