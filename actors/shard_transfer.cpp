// The transfers every shard-based policy shares: a fetch of every shard's
// range, a push of every shard's slice, and the recent pushes kept for a
// shard's new handle.

#include <algorithm>
#include <chrono>
#include <cstring>

#include <caf/actor_cast.hpp>
#include <caf/make_message.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/clock.hpp"
#include "actors/comm_policy.hpp"
#include "messages/shm.hpp"

namespace troupe::actors {

using namespace messages;

void fetch_all(worker_context& ctx, const std::vector<shard_ref>& shards,
               float* dest, std::vector<std::uint64_t>& versions,
               std::function<void()> done,
               std::function<void(std::size_t, std::string)> on_error,
               std::shared_ptr<const bool> cancelled, bool count_wait,
               std::vector<tensor>* kept) {
  auto remaining = std::make_shared<std::size_t>(shards.size());
  auto t0 = now(ctx.self());
  auto* versions_out = &versions;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    auto range = shards[i].range;
    fetch_msg f;
    f.worker = ctx.id();
    f.offset = range.offset;
    f.size = range.size;
    f.clock = ctx.clock();
    ctx.count_sent(msg_type::fetch, wire_size(f));
    ctx.self()
        ->request(shards[i].handle, ctx.request_timeout(), f)
        .then(
            [&ctx, i, range, dest, versions_out, remaining, done, t0, cancelled,
             count_wait, kept](params_msg& p) {
              auto scope = on_message(ctx.probe(), ctx.self(), msg_type::params,
                                      wire_size(p));
              if (cancelled && *cancelled)
                return;
              if (p.offset != range.offset || p.values.size() != range.size) {
                ctx.fail("shard " + std::to_string(i)
                         + " answered a fetch with the wrong range");
                return;
              }
              if (kept)
                (*kept)[i] = std::move(p.values);
              else
                p.values.copy_to(dest + range.offset);
              (*versions_out)[i] = p.version;
              if (--*remaining > 0)
                return;
              if (count_wait)
                ctx.count_wait(nanoseconds_since(ctx.self(), t0));
              done();
            },
            [&ctx, i, on_error, cancelled](caf::error& err) {
              if (cancelled && *cancelled)
                return;
              if (auto* probe = ctx.probe())
                probe->error();
              auto why = "fetch from shard " + std::to_string(i)
                         + " failed: " + ctx.self()->system().render(err);
              if (on_error)
                on_error(i, std::move(why));
              else
                ctx.fail(std::move(why));
            });
  }
}

push_log::push_log(std::size_t shards, std::size_t capacity)
    : sent_(shards), capacity_(capacity) {}

std::size_t push_log::capacity_for(std::size_t replay,
                                   std::size_t parameters) noexcept {
  constexpr std::size_t budget = std::size_t{32} << 20;
  auto cap = std::max<std::size_t>(
      budget / (std::max<std::size_t>(parameters, 1) * sizeof(float)), 4);
  return std::min(replay, cap);
}

void push_log::keep(std::size_t i, caf::message m) {
  auto& q = sent_.at(i);
  q.push_back(std::move(m));
  while (q.size() > capacity_)
    q.pop_front();
}

std::size_t push_log::resend(worker_context& ctx, std::size_t i,
                             const caf::actor& to) const {
  for (const auto& m : sent_.at(i)) {
    // A push's values were marked for the node of the shard it went to;
    // through shared memory they may go to `to`'s node only if marked for
    // it (a reference into another node's segment is refused).
    if (m.match_elements<push_msg>()) {
      auto p = m.get_as<push_msg>(0);
      p.values.share_with(to.node() != ctx.self()->node()
                              ? shm::channel_to(to.node())
                              : nullptr);
      ctx.self()->send(to, std::move(p));
      continue;
    }
    ctx.self()->send(to, m);
  }
  return sent_.at(i).size();
}

namespace {

/// Sends push `x` to shard i, keeping it in `kept` if given.
template <class Msg>
void send_push(worker_context& ctx, const shard_ref& shard, std::size_t i,
               Msg&& x, push_log* kept) {
  ctx.count_sent(msg_type::push, wire_size(x));
  // A shard in this process is lost only with this worker: nothing kept
  // (a kept message would also be copied on delivery, to be changed).
  if (!kept || shard.handle.node() == ctx.self()->node()) {
    ctx.self()->send(shard.handle, std::forward<Msg>(x));
    return;
  }
  auto m = caf::make_message(std::forward<Msg>(x));
  kept->keep(i, m);
  ctx.self()->send(caf::actor_cast<caf::actor>(shard.handle), std::move(m));
}

} // namespace

void push_all(worker_context& ctx, const std::vector<shard_ref>& shards,
              const float* values, std::uint64_t seq,
              const std::vector<std::uint64_t>& versions, std::uint32_t samples,
              std::vector<optim::compressor>* compressors, push_log* kept) {
  for (std::size_t i = 0; i < shards.size(); ++i) {
    auto& r = shards[i].range;
    push_msg p;
    p.worker = ctx.id();
    p.seq = seq;
    p.version = versions[i];
    p.offset = r.offset;
    p.clock = ctx.clock() + 1;
    p.samples = samples;
    if (compressors) {
      compressed_push_msg c{p.worker, p.seq,     p.version, p.offset,
                            p.clock,  p.samples, r.size,    {}};
      try {
        c.packed = (*compressors)[i].compress(values + r.offset, r.size);
        send_push(ctx, shards[i], i, std::move(c), kept);
        continue;
      } catch (const std::invalid_argument&) {
        // Non-finite values: sent dense, so the shard rejects and counts
        // them as for an uncompressed push; the residual is untouched.
      }
    }
    // To another process: straight into its shared-memory segment if it is
    // on this host (the sender's one copy).
    auto node = shards[i].handle.node();
    p.values = tensor::shared_copy(
        node != ctx.self()->node() ? shm::channel_to(node) : nullptr,
        values + r.offset, r.size);
    send_push(ctx, shards[i], i, std::move(p), kept);
  }
}

void add_compression(worker_stats& out, const optim::compressor& c) {
  const auto& s = c.stats();
  out.dense_fc += s.dense_bytes[0];
  out.packed_fc += s.packed_bytes[0];
  out.dense_conv += s.dense_bytes[1];
  out.packed_conv += s.packed_bytes[1];
}

} // namespace troupe::actors
