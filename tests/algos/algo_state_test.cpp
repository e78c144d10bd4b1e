// The algorithms' own roles in a checkpoint (issue [11]): an LSGD group
// leader's and the leader board's state, saved by the running actor,
// restored into a new one and saved again, are equal; a held round
// trigger survives; a wrong file is refused naming it; compressed SGP's
// per-peer copies round-trip; a ShadowSync syncer's state (round, BMUF
// state, counters) round-trips, and two syncers exchanging sums pause
// after the same round.

#include <iostream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "algos/lsgd/group_leader.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/lsgd/lsgd_state.hpp"
#include "algos/sgp/sgp_state.hpp"
#include "algos/shadow/shadow_state.hpp"
#include "algos/shadow/shadow_syncer.hpp"
#include "messages/registry.hpp"
#include "optim/dataset.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace troupe::algos;
using namespace troupe::messages;

namespace {

struct fixture {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  fixture() {
    messages::register_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

/// What the actor answers to save_atom.
template <class Handle>
std::string saved_by(caf::actor_system& sys, const Handle& h) {
  caf::scoped_actor self{sys};
  std::string out;
  self->request(h, std::chrono::seconds{10}, save_atom::value)
      .receive([&](std::string& bytes) { out = std::move(bytes); },
               [&](caf::error& err) { FAIL(sys.render(err)); });
  return out;
}

bool same(const lsgd_record::group& a, const lsgd_record::group& b) {
  return a.leader == b.leader && a.score == b.score && a.changes == b.changes
         && a.rounds == b.rounds && a.skipped == b.skipped
         && a.absent == b.absent;
}

} // namespace

TEST_CASE("an LSGD group leader's state round-trips through a checkpoint") {
  fixture f;
  group_leader_saved s;
  s.group = 1;
  s.leader = 3;
  s.figures.leader = 3;
  s.figures.score = 0.4321;
  s.figures.changes = 5;
  s.figures.rounds = 17;
  s.figures.skipped = 2;
  s.figures.absent = 1;
  // Encoded and decoded: equal.
  auto back = decode_group_leader(encode(s), "g.state");
  CHECK(back.group == 1);
  CHECK(back.leader == 3);
  CHECK(same(back.figures, s.figures));
  // A leader restored from it saves the same state; a fresh one does not.
  group_leader_config gc;
  gc.group = 1;
  gc.record = std::make_shared<lsgd_record>();
  gc.record->groups.resize(2);
  auto fresh = gc;
  gc.state = std::make_shared<const group_leader_saved>(s);
  auto restored = f.sys->spawn(group_leader, gc);
  auto again = decode_group_leader(saved_by(*f.sys, restored), "again");
  CHECK(again.leader == 3);
  CHECK(same(again.figures, s.figures));
  CHECK(same(gc.record->groups[1], s.figures)); // the report's figures
  fresh.record = std::make_shared<lsgd_record>();
  fresh.record->groups.resize(2);
  auto none = decode_group_leader(
      saved_by(*f.sys, f.sys->spawn(group_leader, fresh)), "none");
  CHECK(none.leader == -1);
  CHECK(none.figures.rounds == 0);
  // Not a group leader's file: refused naming it.
  CHECK_THROWS_WITH(
      decode_group_leader(encode(leader_board_saved{}), "algo-group-1.state"),
      Catch::Contains("algo-group-1.state"));
  caf::anon_send_exit(restored, caf::exit_reason::user_shutdown);
}

TEST_CASE("the LSGD leader board's state round-trips, a held trigger with "
          "it") {
  fixture f;
  leader_board_saved s;
  s.global_leader = 2;
  s.held = 48;
  s.record_leader = 2;
  s.changes = 4;
  s.rounds = 9;
  s.skipped = 1;
  s.busy_skipped = 3;
  s.messages = 77;
  s.bytes = 12345;
  s.log = {"round 4: global -> worker 2"};
  auto back = decode_leader_board(encode(s), "b.state");
  CHECK(back.global_leader == 2);
  CHECK(back.held == 48);
  CHECK(back.changes == 4);
  CHECK(back.busy_skipped == 3);
  CHECK(back.bytes == 12345);
  CHECK(back.log == s.log);
  // A board restored without workers (the held trigger finds no round to
  // run: no groups) pauses at once, saves what it was given, resumes.
  s.held = 0;
  leader_board_config bc;
  bc.record = std::make_shared<lsgd_record>();
  bc.state = std::make_shared<const leader_board_saved>(s);
  auto board = f.sys->spawn(leader_board, bc);
  caf::scoped_actor self{*f.sys};
  bool paused = false;
  self->request(board, std::chrono::seconds{10}, pause_atom::value)
      .receive([&](ack_atom) { paused = true; },
               [&](caf::error& err) { FAIL(f.sys->render(err)); });
  CHECK(paused);
  auto again = decode_leader_board(saved_by(*f.sys, board), "again");
  CHECK(again.global_leader == 2);
  CHECK(again.rounds == 9);
  CHECK(again.messages == 77);
  CHECK(again.log == s.log);
  CHECK(bc.record->global_changes == 4); // the report's figures
  self->send(board, resume_atom::value);
  caf::anon_send_exit(board, caf::exit_reason::user_shutdown);
}

TEST_CASE("compressed SGP's per-peer copies round-trip") {
  std::map<std::uint32_t, std::vector<float>> copies{{1, {1, 2, 3}},
                                                     {4, {-1, 0.5f, 7}}};
  optim::state_writer w;
  save_copies(w, "copy_in.", copies);
  optim::state_reader r{w.encode(), "worker-0.state"};
  std::map<std::uint32_t, std::vector<float>> back;
  load_copies(r, "copy_in.", back, 3);
  CHECK(back == copies);
  CHECK_THROWS_WITH(load_copies(r, "copy_in.", back, 4),
                    Catch::Contains("worker-0.state")
                        && Catch::Contains("copy_in.values"));
}

namespace {

/// A syncer's state with every field set (BMUF over 5 parameters).
shadow_syncer_saved some_syncer_state() {
  shadow_syncer_saved s;
  s.index = 1;
  s.mode = "bmuf";
  s.round = 42;
  s.bmuf.emplace(std::vector<float>{1, 2, 3, 4, 5});
  s.bmuf->momentum = {0.5f, -0.25f, 0, 1e-3f, 7};
  s.bmuf->start = {1.5f, 1.75f, 3, 4.001f, 12};
  s.last_steps = {300, 301};
  s.rounds = 41;
  s.timeouts = 1;
  s.corrections = 82;
  s.messages = 250;
  s.bytes = 123456;
  s.steps_between = 600;
  s.seconds_in_rounds = 0.625;
  return s;
}

bool same(const shadow_syncer_saved& a, const shadow_syncer_saved& b) {
  bool bmuf = a.bmuf.has_value() == b.bmuf.has_value();
  if (bmuf && a.bmuf)
    bmuf = a.bmuf->global == b.bmuf->global
           && a.bmuf->momentum == b.bmuf->momentum
           && a.bmuf->start == b.bmuf->start;
  return bmuf && a.index == b.index && a.mode == b.mode && a.round == b.round
         && a.last_steps == b.last_steps && a.rounds == b.rounds
         && a.timeouts == b.timeouts && a.corrections == b.corrections
         && a.messages == b.messages && a.bytes == b.bytes
         && a.steps_between == b.steps_between
         && a.seconds_in_rounds == b.seconds_in_rounds;
}

/// A syncer without members (they are not needed to pause and save).
shadow_syncer_config syncer_of(std::uint32_t index, const std::string& mode,
                               std::uint32_t syncers) {
  shadow_syncer_config c;
  c.index = index;
  c.opts.mode = mode;
  c.workers = syncers;
  c.init = std::make_shared<const std::vector<float>>(
      std::vector<float>{1, 2, 3, 4, 5});
  c.timeout = caf::duration{std::chrono::seconds{10}};
  return c;
}

/// pause_atom's answer, then the drain to `to` (or to that answer).
std::uint64_t paused_at(caf::actor_system& sys, const shadow_syncer_actor& s) {
  caf::scoped_actor self{sys};
  std::uint64_t round = 0;
  self->request(s, std::chrono::seconds{10}, pause_atom::value)
      .receive([&](std::uint64_t r) { round = r; },
               [&](caf::error& err) { FAIL(sys.render(err)); });
  return round;
}

void drained_to(caf::actor_system& sys, const shadow_syncer_actor& s,
                std::uint64_t to) {
  caf::scoped_actor self{sys};
  bool drained = false;
  self->request(s, std::chrono::seconds{30}, pause_atom::value, to)
      .receive([&](ack_atom) { drained = true; },
               [&](caf::error& err) { FAIL(sys.render(err)); });
  CHECK(drained);
}

} // namespace

TEST_CASE("a ShadowSync syncer's state round-trips through a checkpoint") {
  fixture f;
  auto s = some_syncer_state();
  CHECK(same(decode_shadow_syncer(encode(s), "s.state"), s));
  auto ma = s;
  ma.mode = "ma";
  ma.bmuf.reset();
  ma.last_steps.clear();
  CHECK(same(decode_shadow_syncer(encode(ma), "s.state"), ma));
  // A syncer spawned from it (members aside) pauses at its round, drains
  // at once (no round to run) and saves the same state; it refuses to save
  // before the pause.
  auto c = syncer_of(1, "bmuf", 2);
  s.last_steps.clear(); // no members
  check_fits(c, s, "algo-syncer-1.state");
  c.state = std::make_shared<const shadow_syncer_saved>(s);
  auto syncer = f.sys->spawn(shadow_syncer, c);
  {
    caf::scoped_actor self{*f.sys};
    bool refused = false;
    self->request(syncer, std::chrono::seconds{10}, save_atom::value)
        .receive([&](std::string&) {}, [&](caf::error&) { refused = true; });
    CHECK(refused);
  }
  CHECK(paused_at(*f.sys, syncer) == 42);
  drained_to(*f.sys, syncer, 42);
  auto again = decode_shadow_syncer(saved_by(*f.sys, syncer), "again");
  CHECK(same(again, s));
  // A fresh syncer's state is the start: round 0, w_g = w_0 = init, D = 0.
  auto fresh = f.sys->spawn(shadow_syncer, syncer_of(1, "bmuf", 2));
  CHECK(paused_at(*f.sys, fresh) == 0);
  drained_to(*f.sys, fresh, 0);
  auto none = decode_shadow_syncer(saved_by(*f.sys, fresh), "none");
  CHECK(none.round == 0);
  CHECK(none.bmuf->momentum == std::vector<float>(5, 0.0f));
  // A state that does not fit the syncer is refused naming the file.
  auto other = s;
  other.index = 0;
  CHECK_THROWS_WITH(check_fits(c, other, "algo-syncer-1.state"),
                    Catch::Contains("algo-syncer-1.state")
                        && Catch::Contains("syncer 0"));
  CHECK_THROWS_WITH(check_fits(syncer_of(1, "ma", 2), s, "x.state"),
                    Catch::Contains("x.state") && Catch::Contains("bmuf"));
  auto small = syncer_of(1, "bmuf", 2);
  small.init = std::make_shared<const std::vector<float>>(3, 0.0f);
  CHECK_THROWS_WITH(check_fits(small, s, "x.state"),
                    Catch::Contains("bmuf.global"));
  CHECK_THROWS_WITH(
      decode_shadow_syncer(encode(leader_board_saved{}), "algo-syncer-0.state"),
      Catch::Contains("algo-syncer-0.state"));
  caf::anon_send_exit(syncer, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(fresh, caf::exit_reason::user_shutdown);
}

TEST_CASE("two ShadowSync syncers exchanging sums pause after the same "
          "round") {
  fixture f;
  for (const std::string mode : {"ma", "bmuf"}) {
    auto a = f.sys->spawn(shadow_syncer, syncer_of(0, mode, 2));
    auto b = f.sys->spawn(shadow_syncer, syncer_of(1, mode, 2));
    std::vector<caf::actor> peers{caf::actor_cast<caf::actor>(a),
                                  caf::actor_cast<caf::actor>(b)};
    caf::anon_send(a, peers_atom::value, peers);
    caf::anon_send(b, peers_atom::value, peers);
    // Rounds every 10 ms without members; pause A, let B run on a little.
    std::this_thread::sleep_for(std::chrono::milliseconds{60});
    auto ra = paused_at(*f.sys, a);
    std::this_thread::sleep_for(std::chrono::milliseconds{25});
    auto rb = paused_at(*f.sys, b);
    auto to = std::max(ra, rb);
    drained_to(*f.sys, a, to);
    drained_to(*f.sys, b, to);
    auto sa = decode_shadow_syncer(saved_by(*f.sys, a), "a");
    auto sb = decode_shadow_syncer(saved_by(*f.sys, b), "b");
    std::cout << mode << ": paused at rounds " << ra << " and " << rb
              << ", saved at " << sa.round << " and " << sb.round << std::endl;
    CHECK(ra >= 1);
    CHECK(sa.round == to);
    CHECK(sb.round == to);
    CHECK(sa.timeouts + sb.timeouts == 0); // no round waited for a peer
    CHECK(sa.rounds == sa.round);          // each round ended once
    CHECK(sb.rounds == sb.round);
    if (mode == "bmuf")
      CHECK(sa.bmuf->start == sb.bmuf->start); // replicated, bit for bit
    // Resumed (by an actor of this process: a message without a sender is
    // refused), they go on from there together.
    caf::scoped_actor self{*f.sys};
    self->send(a, resume_atom::value);
    self->send(b, resume_atom::value);
    std::this_thread::sleep_for(std::chrono::milliseconds{60});
    auto later = paused_at(*f.sys, a);
    CHECK(later > to);
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(b, caf::exit_reason::user_shutdown);
  }
}
