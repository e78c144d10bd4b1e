#include "actors/detail/shard_buffer.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "actors/detail/log.hpp"

namespace troupe::actors::detail {

using namespace messages;

namespace {

bool waiting(const parameter_shard_state& st) {
  for (const auto& [w, q] : st.pending)
    if (!q.empty())
      return true;
  return false;
}

/// The fewest pushes a round is combined with: a majority of the buffer,
/// and 2f + 1 for a rule told f (below that, a rule cannot outvote f
/// attackers, as in the tail of a job whose honest workers finished).
std::size_t quorum(const parameter_shard_state& st) {
  std::size_t b = st.config.buffer;
  std::size_t q = std::max<std::size_t>(b / 2 + 1, 2 * st.config.rules.f + 1);
  return std::min(q, b);
}

std::size_t workers_in_round(const parameter_shard_state& st,
                             std::size_t& longest) {
  std::size_t k = 0;
  longest = 0;
  for (const auto& [w, q] : st.pending) {
    k += q.empty() ? 0 : 1;
    longest = std::max(longest, q.size());
  }
  return k;
}

/// Combines the round (the oldest push of each worker with one waiting)
/// with the rule and applies it as one update; false (nothing done) if the
/// round has fewer pushes than the quorum.
bool close_round(parameter_shard_state& st) {
  std::size_t longest = 0;
  if (workers_in_round(st, longest) < std::max<std::size_t>(quorum(st), 1))
    return false;
  st.parts.clear();
  std::vector<optim::round_push> in;
  for (auto& [w, q] : st.pending) {
    if (q.empty())
      continue;
    auto& p = q.front();
    st.parts.push_back({w, p.samples, std::as_const(p.values).data()});
    in.push_back({w, p.seq, p.version});
  }
  combine_parts(st);
  st.store->apply_round(st.sum.data(), in);
  did_work(st.self, work_kind::update, st.store->range().size);
  ++st.buffered_rounds;
  for (auto& [w, q] : st.pending)
    if (!q.empty())
      q.pop_front();
  st.round_began = now(st.self);
  if (st.probe)
    st.probe->progress();
  return true;
}

} // namespace

void buffer_push(parameter_shard_state& st, push_msg& p) {
  auto& store = *st.store;
  auto& q = st.pending[p.worker];
  p.values.own(); // checked and combined from the shard's own memory
  auto status = store.check(p.worker, p.seq, p.version, p.offset,
                            std::as_const(p.values).data(), p.values.size());
  // A push already waiting here is a duplicate too (a resend).
  if (status == optim::push_status::applied && !q.empty()
      && p.seq <= q.back().seq)
    status = optim::push_status::duplicate;
  if (status != optim::push_status::applied) {
    store.count(p.worker, status);
    if (status != optim::push_status::duplicate)
      note_rejection(st, p, status);
    close_overdue(st);
    return;
  }
  if (!waiting(st))
    st.round_began = now(st.self);
  q.push_back({p.seq, p.version, p.samples, std::move(p.values)});
  std::size_t longest = 0;
  while ((workers_in_round(st, longest) >= st.config.buffer
          || longest > max_backlog)
         && close_round(st)) {
  }
  // Without a quorum a worker's backlog is capped: its oldest push goes
  // (a worker pushing alone cannot hold the shard's memory).
  if (q.size() > 2 * max_backlog) {
    q.pop_front();
    auto& x = st.rejected[p.worker];
    x.worker = p.worker;
    ++x.discarded;
  }
  close_overdue(st);
}

void close_overdue(parameter_shard_state& st) {
  if (st.config.buffer == 0 || st.config.buffer_deadline.count() <= 0
      || !waiting(st))
    return;
  if (now(st.self) - st.round_began >= st.config.buffer_deadline)
    close_round(st);
}

void combine_parts(parameter_shard_state& st) {
  auto n = st.store->range().size;
  st.sum.resize(n);
  st.rule->combine(st.parts.data(), st.parts.size(), n, st.sum.data());
  for (auto w : st.rule->discarded()) {
    auto& x = st.rejected[w];
    x.worker = w;
    ++x.discarded;
  }
}

void close_leaving(parameter_shard_state& st, worker_id w) {
  auto i = st.pending.find(w);
  while (st.config.buffer > 0 && i != st.pending.end() && !i->second.empty()
         && close_round(st)) {
  }
}

void close_all(parameter_shard_state& st) {
  while (st.config.buffer > 0 && waiting(st) && close_round(st)) {
  }
}

} // namespace troupe::actors::detail
