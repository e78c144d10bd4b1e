// The algorithms' own roles in a checkpoint (issue [11]): an LSGD group
// leader's and the leader board's state, saved by the running actor,
// restored into a new one and saved again, are equal; a held round
// trigger survives; a wrong file is refused naming it; compressed SGP's
// per-peer copies round-trip.

#include <iostream>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "algos/lsgd/group_leader.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/lsgd/lsgd_state.hpp"
#include "algos/sgp/sgp_state.hpp"
#include "messages/registry.hpp"
#include "optim/dataset.hpp"

using namespace troupe;
using namespace troupe::actors;
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
