#include "algos/lsgd/lsgd_state.hpp"

#include <mutex>

#include <nlohmann/json.hpp>

#include "algos/lsgd/leader_board.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

constexpr const char* group_kind = "troupe.lsgd.group_leader";
constexpr const char* board_kind = "troupe.lsgd.leader_board";

/// An int64 stored as uint64 + 1 (so -1, none, is 0).
std::uint64_t shifted(std::int64_t x) {
  return static_cast<std::uint64_t>(x + 1);
}

std::int64_t unshifted(std::uint64_t x) {
  return static_cast<std::int64_t>(x) - 1;
}

} // namespace

std::string group_leader_file(std::uint32_t group) {
  return "algo-group-" + std::to_string(group) + ".state";
}

std::string leader_board_file() {
  return "algo-board-0.state";
}

std::string encode(const group_leader_saved& s) {
  optim::state_writer w;
  w.meta("kind", group_kind);
  w.put_u64("group", s.group);
  w.put_u64("leader", shifted(s.leader));
  const auto& f = s.figures;
  w.put_u64("figures.leader", shifted(f.leader));
  w.put_f64("figures.score", f.score);
  std::uint64_t counts[] = {f.changes, f.rounds, f.skipped, f.absent};
  w.put("figures.counts", counts, 4);
  return w.encode();
}

group_leader_saved decode_group_leader(const std::string& bytes,
                                       const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", group_kind);
  group_leader_saved s;
  s.group = static_cast<std::uint32_t>(r.u64_scalar("group"));
  s.leader = unshifted(r.u64_scalar("leader"));
  auto& f = s.figures;
  f.leader = unshifted(r.u64_scalar("figures.leader"));
  f.score = r.f64_scalar("figures.score");
  auto counts = r.u64("figures.counts", 4);
  f.changes = counts[0];
  f.rounds = counts[1];
  f.skipped = counts[2];
  f.absent = counts[3];
  return s;
}

std::string encode(const leader_board_saved& s) {
  optim::state_writer w;
  w.meta("kind", board_kind);
  w.meta("log", nlohmann::json(s.log).dump());
  w.put_u64("global_leader", s.global_leader);
  w.put_u64("held", s.held);
  w.put_u64("record_leader", shifted(s.record_leader));
  std::uint64_t counts[]
      = {s.changes, s.rounds, s.skipped, s.busy_skipped, s.messages, s.bytes};
  w.put("counts", counts, 6);
  return w.encode();
}

leader_board_saved decode_leader_board(const std::string& bytes,
                                       const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", board_kind);
  leader_board_saved s;
  s.global_leader = static_cast<std::uint32_t>(r.u64_scalar("global_leader"));
  s.held = r.u64_scalar("held");
  s.record_leader = unshifted(r.u64_scalar("record_leader"));
  auto counts = r.u64("counts", 6);
  s.changes = counts[0];
  s.rounds = counts[1];
  s.skipped = counts[2];
  s.busy_skipped = counts[3];
  s.messages = counts[4];
  s.bytes = counts[5];
  auto log = nlohmann::json::parse(r.meta("log"), nullptr, false);
  if (!log.is_array())
    throw optim::data_error(file + ": metadata 'log' is not a JSON array");
  for (const auto& line : log)
    if (line.is_string())
      s.log.push_back(line.get<std::string>());
  return s;
}

group_leader_saved saved_of(group_leader_state& st) {
  group_leader_saved s;
  s.group = st.config.group;
  s.leader = st.leader;
  std::lock_guard<std::mutex> guard{st.config.record->mtx};
  s.figures = st.config.record->groups.at(st.config.group);
  return s;
}

void restore(group_leader_state& st, const group_leader_saved& s) {
  st.leader = s.leader;
  std::lock_guard<std::mutex> guard{st.config.record->mtx};
  st.config.record->groups.at(st.config.group) = s.figures;
}

leader_board_saved saved_of(leader_board_state& st) {
  leader_board_saved s;
  s.global_leader = st.global_leader;
  s.held = st.held;
  auto& rec = *st.config.record;
  std::lock_guard<std::mutex> guard{rec.mtx};
  s.record_leader = rec.global_leader;
  s.changes = rec.global_changes;
  s.rounds = rec.global_rounds;
  s.skipped = rec.global_skipped;
  s.busy_skipped = rec.busy_skipped;
  s.messages = rec.messages;
  s.bytes = rec.bytes;
  s.log = rec.log;
  return s;
}

void restore(leader_board_state& st, const leader_board_saved& s) {
  st.global_leader = s.global_leader;
  st.held = s.held;
  auto& rec = *st.config.record;
  std::lock_guard<std::mutex> guard{rec.mtx};
  rec.global_leader = s.record_leader;
  rec.global_changes = s.changes;
  rec.global_rounds = s.rounds;
  rec.global_skipped = s.skipped;
  rec.busy_skipped = s.busy_skipped;
  rec.messages = s.messages;
  rec.bytes = s.bytes;
  rec.log = s.log;
}

} // namespace troupe::algos
