// A Gaia server's state in a checkpoint (algos/gaia/gaia_server.hpp): its
// replica and optimizer (the store), what the other groups know of it (the
// base), its clocks and counters.

#include <string>
#include <vector>

#include "algos/gaia/gaia_server.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

constexpr const char* gaia_kind = "gaia_server";

} // namespace

std::string gaia_server_file(std::uint32_t g) {
  return "algo-gaia-server-" + std::to_string(g) + ".state";
}

std::string save_gaia_server(const gaia_server_state& st) {
  optim::state_writer w;
  w.meta("kind", gaia_kind);
  w.put_u64("group", st.config.group);
  w.put_u64("groups", st.config.groups);
  st.store->save(w, "store.");
  w.put("base", st.base);
  w.put("peer_clocks", st.peer_clocks);
  w.put_f64("lr0", st.lr0);
  std::vector<std::uint64_t> counts{
      st.seq,          st.last_clock_sent,  st.updates,
      st.checked,      st.sent_entries,     st.mirror_messages,
      st.mirror_bytes, st.received_entries, st.received_messages};
  w.put("counts", counts);
  return w.encode();
}

void load_gaia_server(gaia_server_state& st, const std::string& bytes) {
  auto file = gaia_server_file(st.config.group);
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", gaia_kind);
  r.expect_u64("group", st.config.group);
  r.expect_u64("groups", st.config.groups);
  st.store->load(r, "store.");
  auto base = r.f32("base");
  if (base.size() != st.base.size())
    throw r.error("base", std::to_string(base.size())
                              + " values for a model of "
                              + std::to_string(st.base.size()));
  st.base = std::move(base);
  auto clocks = r.u64("peer_clocks");
  if (clocks.size() != st.config.groups)
    throw r.error("peer_clocks", "not one clock per group");
  st.saved_clocks = std::move(clocks);
  st.lr0 = r.f64_scalar("lr0");
  auto counts = r.u64("counts", 9);
  st.seq = counts[0];
  st.last_clock_sent = counts[1];
  st.updates = counts[2];
  st.checked = counts[3];
  st.sent_entries = counts[4];
  st.mirror_messages = counts[5];
  st.mirror_bytes = counts[6];
  st.received_entries = counts[7];
  st.received_messages = counts[8];
}

} // namespace troupe::algos
