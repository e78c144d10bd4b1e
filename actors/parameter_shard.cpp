#include "actors/parameter_shard.hpp"

#include <algorithm>

#include <caf/actor_cast.hpp>

#include "actors/checkpoint_state.hpp"
#include "actors/clock.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "actors/detail/shard_buffer.hpp"
#include "actors/detail/shard_replica.hpp"
#include "messages/errors.hpp"
#include "messages/shm.hpp"
#include "optim/compress.hpp"
#include "optim/param_hash.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

using self_ptr = parameter_shard_actor::stateful_pointer<parameter_shard_state>;

/// The reply to a fetch; `remote`: the requester's node if in another
/// process (the values then go through shared memory on this host).
params_msg snapshot(parameter_shard_state& st, const caf::node_id& remote) {
  params_msg reply;
  reply.version = st.store->version();
  reply.offset = st.store->range().offset;
  // To another process: straight into its shared-memory segment if it is
  // on this host (the sender's one copy).
  reply.values
      = tensor::shared_copy(remote ? shm::channel_to(remote) : nullptr,
                            st.store->params(), st.store->range().size);
  ++st.messages;
  auto bytes = wire_size(reply);
  st.bytes += bytes;
  if (st.probe) {
    st.probe->sent(msg_type::params, bytes);
    st.probe->progress();
  }
  return reply;
}

/// Whether a fetch may be answered now.
bool grantable(parameter_shard_state& st, const fetch_msg& f) {
  if (st.config.mode == shard_mode::sync)
    return st.store->version() >= f.clock;
  if (st.backup && st.unacked >= detail::max_unanswered_flushes)
    return false; // the backup catches up first
  if (!st.config.staleness_bound || st.clocks.empty())
    return true;
  auto s = *st.config.staleness_bound;
  std::uint64_t min_clock = st.clocks.begin()->second;
  for (auto& [w, c] : st.clocks)
    min_clock = std::min(min_clock, c);
  if (f.clock > min_clock + s)
    return false;
  if (f.clock > min_clock)
    st.max_clock_gap = std::max(st.max_clock_gap, f.clock - min_clock);
  return true;
}

} // namespace

void detail::serve_waiting(parameter_shard_state& st) {
  // One pass; the ones still waiting keep their order.
  auto& w = st.waiting;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < w.size(); ++i)
    if (grantable(st, w[i].request))
      w[i].promise.deliver(snapshot(st, w[i].remote));
    else if (kept++ != i)
      w[kept - 1] = std::move(w[i]);
  w.erase(w.begin() + static_cast<std::ptrdiff_t>(kept), w.end());
}

namespace detail {

void note_rejection(parameter_shard_state& st, const push_msg& p,
                    optim::push_status status) {
  auto& rec = st.rejected[p.worker];
  rec.worker = p.worker;
  if (status == optim::push_status::non_finite) {
    ++rec.non_finite;
    ++st.non_finite;
  } else {
    ++rec.bad_range;
    ++st.bad_range;
  }
  if (st.probe)
    st.probe->error();
  // Rate-limited: a worker's 1st, 2nd, 4th, 8th, ... rejection is logged
  // (a diverging worker's every push is rejected until it gives up).
  auto n = rec.non_finite + rec.bad_range;
  if ((n & (n - 1)) != 0)
    return;
  detail::log().warn("shard {}: rejected push {} of worker {} ({}): "
                     "offset {} size {} version {}; parameters untouched "
                     "({} rejected from this worker so far)",
                     st.config.index, p.seq, p.worker, to_string(status),
                     p.offset, p.values.size(), p.version, n);
}

} // namespace detail

namespace {

using detail::note_rejection;
using detail::serve_waiting;

/// Sync mode: applies every complete round, in clock order.
void complete_rounds(parameter_shard_state& st) {
  while (!st.rounds.empty()) {
    auto& [clock, round] = *st.rounds.begin();
    if (clock != st.store->version() + 1)
      break;
    // Every tracked worker that started before this clock must contribute
    // (all did, with clocks_max below it: then a short round is not done).
    if (st.clocks_max < clock && round.size() < st.clocks.size())
      return;
    for (auto& [w, start] : st.clocks)
      if (start < clock && round.count(w) == 0)
        return;
    std::vector<worker_id> contributors;
    st.parts.clear();
    for (auto& [w, c] : round)
      if (c.samples > 0) {
        contributors.push_back(w);
        st.parts.push_back({w, c.samples, c.values.data()});
      }
    if (st.parts.empty()) {
      detail::log().warn("shard {}: every push of step {} was rejected; "
                         "step skipped",
                         st.config.index, clock);
      st.store->skip();
    } else {
      detail::combine_parts(st);
      st.store->apply(st.sum.data(), clock, contributors);
      did_work(st.self, work_kind::update, st.store->range().size);
    }
    st.rounds.erase(st.rounds.begin());
  }
}

/// Sync mode, a restored shard (config.catch_up): the job is at round
/// `clock` (a worker pushed for it), the shard at an older one (its
/// checkpoint's). Its round moves to clock - 1; the rounds collected up to
/// there are dropped.
void catch_up(parameter_shard_state& st, std::uint64_t clock) {
  auto from = st.store->version();
  st.store->skip_to(clock - 1);
  while (!st.rounds.empty() && st.rounds.begin()->first < clock)
    st.rounds.erase(st.rounds.begin());
  detail::log().warn("shard {}: restored at round {}, the job is at round {}: "
                     "the rounds between are skipped for this shard",
                     st.config.index, from, clock);
}

void on_push(parameter_shard_state& st, push_msg& p) {
  auto& store = *st.store;
  const auto before = store.version(); // a sync fetch waits for a version
  if (st.config.mode == shard_mode::sync && st.config.catch_up
      && p.clock > store.version() + 1)
    catch_up(st, p.clock);
  if (st.config.mode == shard_mode::async && st.config.buffer > 0) {
    detail::buffer_push(st, p);
    return;
  }
  if (st.config.mode == shard_mode::async) {
    auto r = store.push(p.worker, p.seq, p.version, p.offset, p.values.data(),
                        p.values.size());
    if (r.status == optim::push_status::applied)
      did_work(st.self, work_kind::update, p.values.size());
    if (r.status == optim::push_status::applied && st.awaiting_first_push) {
      st.awaiting_first_push = false;
      detail::log().info("shard {}: first push applied since its start from a "
                         "checkpoint (version {})",
                         st.config.index, r.version);
    }
    if (r.status == optim::push_status::applied && st.probe) {
      static const std::vector<std::uint64_t> bounds{0, 1, 2, 4, 8, 16, 32, 64};
      st.probe->progress();
      st.probe->observe("push_staleness", r.staleness, bounds);
      st.probe->gauge("version", static_cast<double>(r.version));
      st.probe->gauge("lr", st.store->current_lr());
    }
    if (r.status == optim::push_status::non_finite
        || r.status == optim::push_status::bad_range)
      note_rejection(st, p, r.status);
    return;
  }
  auto status = store.check(p.worker, p.seq, p.version, p.offset,
                            p.values.data(), p.values.size());
  if (status == optim::push_status::duplicate || p.clock <= store.version()) {
    store.count(p.worker, optim::push_status::duplicate);
    return;
  }
  auto& slot = st.rounds[p.clock][p.worker];
  if (status == optim::push_status::applied && p.samples > 0) {
    slot.samples = p.samples;
    slot.values = std::move(p.values);
  } else {
    store.count(p.worker, status);
    if (status != optim::push_status::applied)
      note_rejection(st, p, status);
  }
  complete_rounds(st);
  if (store.version() != before)
    serve_waiting(st);
}

shard_stats make_stats(const parameter_shard_state& st) {
  auto out = store_stats(*st.store, st.rejected);
  out.shard = st.config.index;
  out.max_clock_gap = st.max_clock_gap;
  out.messages = st.messages;
  out.bytes = st.bytes;
  return out;
}

/// Decodes a compressed push into `p` (c's header, dense values); false
/// (logged, counted as bad_range) if it does not decode.
bool decode(parameter_shard_state& st, const compressed_push_msg& c,
            push_msg& p) {
  p = push_msg{c.worker, c.seq, c.version, c.offset, c.clock, c.samples, {}};
  try {
    if (c.size != st.store->range().size)
      throw std::invalid_argument(std::to_string(c.size)
                                  + " coordinates for a range of "
                                  + std::to_string(st.store->range().size));
    std::vector<float> dense(c.size);
    optim::decompress(c.packed, dense.data(), dense.size());
    p.values = tensor{std::move(dense)};
    return true;
  } catch (const std::invalid_argument& e) {
    detail::log().warn("shard {}: cannot decode push {} of worker {}: {}",
                       st.config.index, c.seq, c.worker, e.what());
    note_rejection(st, p, optim::push_status::bad_range);
    return false;
  }
}

} // namespace

parameter_shard_actor::behavior_type
parameter_shard(self_ptr self, parameter_shard_config config) {
  auto& st = self->state;
  st.self = self;
  st.store = std::make_unique<optim::shard_store<float>>(
      config.range, config.init->data(), config.store);
  st.rule = optim::make_aggregation_rule(config.aggregation, config.rules);
  st.config = std::move(config);
  if (st.config.state) {
    load_shard(st, *st.config.state,
               "shard " + std::to_string(st.config.index) + "'s checkpoint");
    st.awaiting_first_push = true;
  }
  // A hot backup shows as such in the monitor.
  st.probe = make_probe(self,
                        "shard " + std::to_string(st.config.index)
                            + (st.config.primary ? " backup" : ""),
                        "shard", true);
  st.probe->activity(st.config.primary ? "backing up" : "serving");
  return {
      [self](push_msg& p) {
        auto scope = on_message(self->state.probe.get(), self, msg_type::push,
                                wire_size(p));
        detail::note_direct(self);
        on_push(self->state, p);
        detail::forward(self, std::move(p));
      },
      [self](compressed_push_msg& c) {
        auto& st = self->state;
        auto scope
            = on_message(st.probe.get(), self, msg_type::push, wire_size(c));
        // Decoded here; then the same path as a dense push (sync: the
        // decoded gradients are summed dense, weighted, in worker order).
        detail::note_direct(self);
        push_msg p;
        if (decode(st, c, p))
          on_push(st, p);
        detail::forward(self, std::move(c));
      },
      [self](const fetch_msg& f) -> caf::result<params_msg> {
        auto& st = self->state;
        auto scope
            = on_message(st.probe.get(), self, msg_type::fetch, wire_size(f));
        auto range = st.store->range();
        if (f.offset != range.offset || f.size != range.size) {
          detail::log().warn("shard {}: fetch of worker {} for [{}, {}) does "
                             "not match the shard's range [{}, {})",
                             st.config.index, f.worker, f.offset,
                             f.offset + f.size, range.offset,
                             range.offset + range.size);
          return make_error(errc::bad_request,
                            "shard " + std::to_string(st.config.index)
                                + ": a fetch of another range");
        }
        if (st.config.mode == shard_mode::async && st.clocks.count(f.worker)) {
          auto& c = st.clocks[f.worker];
          c = std::max(c, f.clock);
          st.clocks_max = std::max(st.clocks_max, c);
          serve_waiting(st);
        }
        caf::node_id remote;
        if (auto& from = self->current_sender();
            from && from->node() != self->node())
          remote = from->node();
        detail::close_overdue(st);
        if (grantable(st, f))
          return snapshot(st, remote);
        auto promise = self->make_response_promise<params_msg>();
        st.waiting.push_back({f, promise, remote});
        return promise;
      },
      [self](track_atom, worker_id w, std::uint64_t clock) {
        auto scope = on_message(self->state.probe.get(), self, msg_type::track,
                                small_message_bytes);
        self->state.clocks[w] = clock;
        self->state.clocks_max = std::max(self->state.clocks_max, clock);
      },
      [self](untrack_atom, worker_id w) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::untrack,
                                small_message_bytes);
        st.clocks.erase(w);
        detail::close_leaving(st, w); // a finished worker's last pushes
        if (st.config.mode == shard_mode::sync)
          complete_rounds(st);
        serve_waiting(st);
      },
      [self](stats_atom) -> caf::result<shard_stats> {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::stats,
                                small_message_bytes);
        detail::close_all(st); // the statistics count every push received
        return detail::stats_after_backup(self, make_stats);
      },
      [self](flush_atom) {
        auto scope = on_message(self->state.probe.get(), self, msg_type::other,
                                small_message_bytes);
        detail::close_all(self->state); // buffered rounds: nothing waits
        return self->state.store->version();
      },
      [self](save_atom) -> caf::result<std::string> {
        auto& st = self->state;
        if (!detail::from_owner(self))
          return detail::refuse(self,
                                "shard " + std::to_string(st.config.index),
                                "save", "the coordinator's node");
        auto scope = on_message(st.probe.get(), self, msg_type::other,
                                small_message_bytes);
        detail::close_all(st); // a checkpoint holds no buffered push
        return save_shard(st);
      },
      [self](replicate_atom, caf::actor& backup) -> caf::result<bool> {
        return detail::attach_backup(self, std::move(backup));
      },
      [self](replicate_atom, const std::string& state) -> caf::result<bool> {
        return detail::take_primary_state(self, state);
      },
      [self](replicate_atom, push_msg& p) {
        auto& st = self->state;
        auto scope
            = on_message(st.probe.get(), self, msg_type::push, wire_size(p));
        if (detail::from_primary(self, "push"))
          on_push(st, p);
      },
      [self](replicate_atom, compressed_push_msg& c) {
        auto& st = self->state;
        auto scope
            = on_message(st.probe.get(), self, msg_type::push, wire_size(c));
        push_msg p;
        if (detail::from_primary(self, "push") && decode(st, c, p))
          on_push(st, p);
      },
  };
}

} // namespace troupe::actors
