#include "algos/sandblaster/detail/lbfgs_state.hpp"

#include "optim/state_file.hpp"

namespace troupe::algos::detail {

namespace {

constexpr const char* shard_kind = "troupe.lbfgs_shard";
constexpr const char* driver_kind = "troupe.lbfgs_driver";
constexpr const char* worker_kind = "troupe.lbfgs_worker";

/// The slots a checkpoint holds: x, g and every ring position's s and y
/// (d, q and the trial gradient are rebuilt by the next iteration).
std::vector<std::pair<std::string, std::uint32_t>> saved_slots(std::size_t m) {
  std::vector<std::pair<std::string, std::uint32_t>> out{{"x", optim::slot_x},
                                                         {"g", optim::slot_g}};
  for (std::uint32_t j = 0; j < m; ++j) {
    out.emplace_back("s." + std::to_string(j), optim::slot_s(j));
    out.emplace_back("y." + std::to_string(j), optim::slot_y(j));
  }
  return out;
}

} // namespace

std::string save_lbfgs_shard(const lbfgs_shard_state& st) {
  optim::state_writer w;
  w.meta("kind", shard_kind);
  w.put_u64("index", st.config.index);
  w.put_u64("memory", st.config.memory);
  w.put_u64("offset", st.config.range.offset);
  w.put_u64("size", st.config.range.size);
  w.put_u64("pass", st.pass);
  for (const auto& [name, slot] : saved_slots(st.config.memory))
    w.put("slot." + name, st.store->slot(slot));
  std::uint64_t counters[] = {st.duplicates, st.stale, st.malformed};
  w.put("counters", counters, 3);
  return w.encode();
}

void load_lbfgs_shard(lbfgs_shard_state& st, const std::string& bytes,
                      const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", shard_kind);
  r.expect_u64("index", st.config.index);
  r.expect_u64("memory", st.config.memory);
  r.expect_u64("offset", st.config.range.offset);
  r.expect_u64("size", st.config.range.size);
  auto n = st.config.range.size;
  // Read everything before changing anything: a bad file leaves the shard
  // as it was.
  std::vector<std::vector<double>> slots;
  auto names = saved_slots(st.config.memory);
  for (const auto& [name, slot] : names) {
    slots.emplace_back(n);
    r.f64("slot." + name, slots.back().data(), n);
  }
  auto counters = r.u64("counters", 3);
  auto pass = r.u64_scalar("pass");
  for (std::size_t i = 0; i < names.size(); ++i)
    st.store->slot(names[i].second) = std::move(slots[i]);
  st.point = st.store->slot(optim::slot_x);
  st.pass = pass;
  st.parts.clear();
  st.counted.clear();
  st.next_fold = 0;
  st.folded_samples = 0;
  st.duplicates = counters[0];
  st.stale = counters[1];
  st.malformed = counters[2];
}

std::string save_lbfgs_driver(const lbfgs_driver_state& st) {
  optim::state_writer w;
  w.meta("kind", driver_kind);
  w.put_u64("memory", st.h.memory);
  w.put_u64("shards", st.shards.size());
  w.put_u64("workers", st.workers.size());
  w.put_u64("portions", st.job->portions);
  std::vector<std::uint64_t> ring(st.h.ring.begin(), st.h.ring.end());
  w.put("history.ring", ring);
  w.put("history.rho", st.h.rho);
  w.put_f64("history.gamma", st.h.gamma);
  w.put_f64("f", st.fx);
  std::uint64_t counters[]
      = {st.iterations, st.pass,     st.counted, st.duplicates,
         st.backups,    st.reissued, st.lost,    st.rejected,
         st.evaluated,  st.reported, st.handed};
  w.put("counters", counters, 11);
  return w.encode();
}

void load_lbfgs_driver(lbfgs_driver_state& st, const std::string& bytes,
                       const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", driver_kind);
  r.expect_u64("memory", st.h.memory);
  r.expect_u64("shards", st.job->shards);
  r.expect_u64("workers", st.job->workers);
  r.expect_u64("portions", st.job->portions);
  auto ring = r.u64("history.ring");
  auto rho = r.f64("history.rho");
  if (ring.size() > st.h.memory)
    throw r.error("history.ring", std::to_string(ring.size())
                                      + " pairs for a memory of "
                                      + std::to_string(st.h.memory));
  if (rho.size() != ring.size())
    throw r.error("history.rho", "not one rho per pair");
  for (auto pos : ring)
    if (pos >= st.h.memory)
      throw r.error("history.ring",
                    "ring position " + std::to_string(pos) + " out of range");
  auto gamma = r.f64_scalar("history.gamma");
  auto fx = r.f64_scalar("f");
  auto c = r.u64("counters", 11);
  st.h.ring.assign(ring.begin(), ring.end());
  st.h.rho = std::move(rho);
  st.h.gamma = gamma;
  st.fx = fx;
  st.iterations = static_cast<std::size_t>(c[0]);
  st.pass = c[1];
  st.counted = c[2];
  st.duplicates = c[3];
  st.backups = c[4];
  st.reissued = c[5];
  st.lost = c[6];
  st.rejected = c[7];
  st.evaluated = c[8];
  st.reported = c[9];
  st.handed = c[10];
}

std::string save_lbfgs_worker(const lbfgs_driver_state& st, std::size_t w) {
  optim::state_writer out;
  out.meta("kind", worker_kind);
  out.put_u64("id", w);
  out.put_u64("results", st.results.at(w));
  out.put_u64("live", st.live.at(w) ? 1 : 0);
  return out.encode();
}

void load_lbfgs_worker(lbfgs_driver_state& st, std::size_t w,
                       const std::string& bytes, const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", worker_kind);
  r.expect_u64("id", w);
  r.u64_scalar("live"); // a lost worker comes back with the resumed run
  st.results.at(w) = r.u64_scalar("results");
}

} // namespace troupe::algos::detail
