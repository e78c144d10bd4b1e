#include "actors/checkpoint_state.hpp"

#include <algorithm>

#include "actors/parameter_shard.hpp"
#include "actors/worker.hpp"
#include "optim/state_file.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

constexpr const char* shard_kind = "troupe.shard";
constexpr const char* worker_kind = "troupe.worker";

} // namespace

std::string save_shard(const parameter_shard_state& st) {
  optim::state_writer w;
  w.meta("kind", shard_kind);
  w.put_u64("index", st.config.index);
  st.store->save(w, "store.");
  std::vector<std::uint64_t> who, clock;
  for (const auto& [id, c] : st.clocks) {
    who.push_back(id);
    clock.push_back(c);
  }
  w.put("clocks.worker", who);
  w.put("clocks.clock", clock);
  // Pending synchronous rounds: a paused worker may be one round ahead.
  std::vector<std::uint64_t> r_clock, r_worker, r_samples, r_size;
  std::vector<float> r_values;
  for (const auto& [c, round] : st.rounds)
    for (const auto& [id, part] : round) {
      r_clock.push_back(c);
      r_worker.push_back(id);
      r_samples.push_back(part.samples);
      r_size.push_back(part.values.size());
      r_values.insert(r_values.end(), part.values.data(),
                      part.values.data() + part.values.size());
    }
  w.put("rounds.clock", r_clock);
  w.put("rounds.worker", r_worker);
  w.put("rounds.samples", r_samples);
  w.put("rounds.size", r_size);
  w.put("rounds.values", r_values);
  std::vector<std::uint64_t> rejected;
  for (const auto& [id, x] : st.rejected)
    rejected.insert(rejected.end(),
                    {id, x.applied, x.duplicates, x.non_finite, x.bad_range});
  w.put("rejected", rejected);
  // Rounds the aggregation rule left each worker out of (since [15]; a
  // checkpoint without them reads as none).
  std::vector<std::uint64_t> discarded;
  for (const auto& [id, x] : st.rejected)
    discarded.insert(discarded.end(), {id, x.discarded});
  w.put("discarded", discarded);
  // The rule's own state across rounds (cclip's center, LICM's last
  // gradients).
  if (st.rule)
    st.rule->save(w, "rule.");
  std::uint64_t counters[]
      = {st.max_clock_gap, st.messages, st.bytes, st.non_finite, st.bad_range};
  w.put("counters", counters, 5);
  return w.encode();
}

void load_shard(parameter_shard_state& st, const std::string& bytes,
                const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", shard_kind);
  r.expect_u64("index", st.config.index);
  st.store->load(r, "store.");
  auto who = r.u64("clocks.worker");
  auto clock = r.u64("clocks.clock");
  if (who.size() != clock.size())
    throw r.error("clocks.clock", "not one clock per worker");
  st.clocks.clear();
  for (std::size_t i = 0; i < who.size(); ++i) {
    st.clocks[static_cast<worker_id>(who[i])] = clock[i];
    st.clocks_max = std::max(st.clocks_max, clock[i]);
  }
  auto r_clock = r.u64("rounds.clock");
  auto r_worker = r.u64("rounds.worker");
  auto r_samples = r.u64("rounds.samples");
  auto r_size = r.u64("rounds.size");
  auto r_values = r.f32("rounds.values");
  auto n = r_clock.size();
  if (r_worker.size() != n || r_samples.size() != n || r_size.size() != n)
    throw r.error("rounds.worker", "the round tables differ in length");
  st.rounds.clear();
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (r_size[i] > r_values.size() - at)
      throw r.error("rounds.values", "shorter than the rounds' sizes");
    auto& part = st.rounds[r_clock[i]][static_cast<worker_id>(r_worker[i])];
    part.samples = static_cast<std::uint32_t>(r_samples[i]);
    part.values = tensor{std::vector<float>(
        r_values.begin() + static_cast<std::ptrdiff_t>(at),
        r_values.begin() + static_cast<std::ptrdiff_t>(at + r_size[i]))};
    at += r_size[i];
  }
  if (at != r_values.size())
    throw r.error("rounds.values", "longer than the rounds' sizes");
  auto rejected = r.u64("rejected");
  if (rejected.size() % 5 != 0)
    throw r.error("rejected", "not five counters per worker");
  st.rejected.clear();
  for (std::size_t i = 0; i < rejected.size(); i += 5) {
    auto id = static_cast<worker_id>(rejected[i]);
    st.rejected[id] = worker_pushes{id, rejected[i + 1], rejected[i + 2],
                                    rejected[i + 3], rejected[i + 4]};
  }
  if (r.has("discarded")) {
    auto discarded = r.u64("discarded");
    if (discarded.size() % 2 != 0)
      throw r.error("discarded", "not a worker and a count each");
    for (std::size_t i = 0; i < discarded.size(); i += 2) {
      auto id = static_cast<worker_id>(discarded[i]);
      auto& x = st.rejected[id];
      x.worker = id;
      x.discarded = discarded[i + 1];
    }
  }
  if (st.rule)
    st.rule->load(r, "rule.");
  auto counters = r.u64("counters", 5);
  st.max_clock_gap = counters[0];
  st.messages = counters[1];
  st.bytes = counters[2];
  st.non_finite = counters[3];
  st.bad_range = counters[4];
}

std::string save_worker(const worker_state& st) {
  optim::state_writer w;
  w.meta("kind", worker_kind);
  w.put_u64("id", st.config.id);
  st.replica_->save_state(w, "replica.");
  st.policy->save(w, "policy.");
  const auto& c = st.counters;
  std::uint64_t counters[]
      = {c.steps,   c.samples, c.messages, c.bytes,        c.compute_ns,
         c.wait_ns, c.mixes,   c.timeouts, st.start_clock, st.non_finite_run};
  w.put("counters", counters, 10);
  return w.encode();
}

void load_worker(worker_state& st, const std::string& bytes,
                 const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", worker_kind);
  r.expect_u64("id", st.config.id);
  st.replica_->load_state(r, "replica.");
  st.policy->load(r, "policy.");
  auto counters = r.u64("counters", 10);
  auto& c = st.counters;
  c.steps = counters[0];
  c.samples = counters[1];
  c.messages = counters[2];
  c.bytes = counters[3];
  c.compute_ns = counters[4];
  c.wait_ns = counters[5];
  c.mixes = counters[6];
  c.timeouts = counters[7];
  st.start_clock = counters[8];
  st.non_finite_run = static_cast<std::uint32_t>(counters[9]);
}

} // namespace troupe::actors
