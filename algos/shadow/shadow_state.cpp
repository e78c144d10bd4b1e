#include "algos/shadow/shadow_state.hpp"

#include "algos/shadow/shadow_syncer.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

constexpr const char* syncer_kind = "troupe.shadow.syncer";

} // namespace

std::string shadow_syncer_file(std::uint32_t g) {
  return "algo-syncer-" + std::to_string(g) + ".state";
}

std::string encode(const shadow_syncer_saved& s) {
  optim::state_writer w;
  w.meta("kind", syncer_kind);
  w.meta("mode", s.mode);
  w.meta("bmuf", s.bmuf ? "yes" : "no");
  w.put_u64("index", s.index);
  w.put_u64("round", s.round);
  w.put_u64("members", s.last_steps.size());
  if (!s.last_steps.empty())
    w.put("last_steps", s.last_steps);
  if (s.bmuf) {
    w.put("bmuf.global", s.bmuf->global);
    w.put("bmuf.momentum", s.bmuf->momentum);
    w.put("bmuf.start", s.bmuf->start);
  }
  std::uint64_t counts[] = {s.rounds,   s.timeouts, s.corrections,
                            s.messages, s.bytes,    s.steps_between};
  w.put("counts", counts, 6);
  w.put_f64("seconds_in_rounds", s.seconds_in_rounds);
  w.put_u64("pushes", s.pushes);
  return w.encode();
}

shadow_syncer_saved decode_shadow_syncer(const std::string& bytes,
                                         const std::string& file) {
  optim::state_reader r{bytes, file};
  r.expect_meta("kind", syncer_kind);
  shadow_syncer_saved s;
  s.mode = r.meta("mode");
  s.index = static_cast<std::uint32_t>(r.u64_scalar("index"));
  s.round = r.u64_scalar("round");
  auto members = r.u64_scalar("members");
  if (members > 0)
    s.last_steps = r.u64("last_steps", members);
  if (r.meta("bmuf") == "yes") {
    auto global = r.f32("bmuf.global");
    s.bmuf.emplace(global);
    s.bmuf->momentum.resize(global.size());
    s.bmuf->start.resize(global.size());
    r.f32("bmuf.momentum", s.bmuf->momentum.data(), global.size());
    r.f32("bmuf.start", s.bmuf->start.data(), global.size());
  }
  auto counts = r.u64("counts", 6);
  s.rounds = counts[0];
  s.timeouts = counts[1];
  s.corrections = counts[2];
  s.messages = counts[3];
  s.bytes = counts[4];
  s.steps_between = counts[5];
  s.seconds_in_rounds = r.f64_scalar("seconds_in_rounds");
  if (r.has("pushes"))
    s.pushes = r.u64_scalar("pushes");
  return s;
}

shadow_syncer_saved saved_of(const shadow_syncer_state& st) {
  shadow_syncer_saved s;
  s.index = st.config.index;
  s.mode = st.config.opts.mode;
  s.round = st.round;
  s.bmuf = st.bmuf;
  s.last_steps = st.last_steps;
  s.rounds = st.rounds;
  s.timeouts = st.timeouts;
  s.corrections = st.corrections;
  s.messages = st.messages;
  s.bytes = st.bytes;
  s.steps_between = st.steps_between;
  s.pushes = st.pushes;
  s.seconds_in_rounds = st.seconds_in_rounds;
  return s;
}

void check_fits(const shadow_syncer_config& config,
                const shadow_syncer_saved& s, const std::string& file) {
  auto bad = [&](const std::string& what) {
    throw optim::data_error(file + ": " + what);
  };
  if (s.index != config.index)
    bad("the state of syncer " + std::to_string(s.index) + ", not of syncer "
        + std::to_string(config.index));
  if (s.mode != config.opts.mode)
    bad("a '" + s.mode + "' syncer's state, this job's syncers do '"
        + config.opts.mode + "'");
  if (s.last_steps.size() != config.members.size())
    bad("the state of a syncer of " + std::to_string(s.last_steps.size())
        + " workers, syncer " + std::to_string(config.index) + " has "
        + std::to_string(config.members.size()));
  bool bmuf = config.opts.mode == "bmuf" && config.init;
  if (bmuf != s.bmuf.has_value())
    bad(s.bmuf ? "a BMUF state this syncer does not keep"
               : "no BMUF state (tensor 'bmuf.global')");
  if (s.bmuf && s.bmuf->global.size() != config.init->size())
    bad("tensor 'bmuf.global': " + std::to_string(s.bmuf->global.size())
        + " values, the model has " + std::to_string(config.init->size()));
}

void restore(shadow_syncer_state& st, const shadow_syncer_saved& s) {
  st.round = s.round;
  st.bmuf = s.bmuf;
  st.last_steps = s.last_steps;
  st.rounds = s.rounds;
  st.timeouts = s.timeouts;
  st.corrections = s.corrections;
  st.messages = s.messages;
  st.bytes = s.bytes;
  st.steps_between = s.steps_between;
  st.pushes = s.pushes;
  st.seconds_in_rounds = s.seconds_in_rounds;
}

} // namespace troupe::algos
