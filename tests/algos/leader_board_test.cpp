// LSGD's leader board (algorithms.md §4): a global round due while a local
// round is under way waits for it and runs next; the triggers it displaces
// are counted as skipped.

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "algos/lsgd/group_leader.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/lsgd/lsgd_policy.hpp"
#include "messages/registry.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace troupe::algos;
using namespace troupe::messages;

TEST_CASE("LSGD's leader board: a global round due while a local round is "
          "under way waits for it and runs, never skipped") {
  // Two groups of one worker each (workers * tau = 8, workers * tau_G =
  // 32). Group 0 holds its answer to the first round (t = 8) until the
  // triggers t = 16 (local), 32 (global) and 40 (local) have reached the
  // board: the global one waits and runs next, the two others are skipped.
  caf::actor_system_config cfg;
  messages::register_types(cfg);
  cfg.set("scheduler.max-threads", 4); // group 0 blocks one
  caf::actor_system sys{cfg};
  struct seen {
    std::mutex mtx;
    std::vector<std::uint64_t> rounds; // by group 0
    std::vector<bool> leads;           // lead_msg.global, by any worker
    std::atomic<bool> release{false};
  };
  auto log = std::make_shared<seen>();
  auto group = [log](int g) {
    return
        [log,
         g](group_leader_actor::pointer) -> group_leader_actor::behavior_type {
          return {
              [log, g](round_atom, std::uint64_t r, bool) -> score_msg {
                if (g == 0) {
                  {
                    std::lock_guard<std::mutex> guard{log->mtx};
                    log->rounds.push_back(r);
                  }
                  for (int i = 0; i < 30000 && !log->release; ++i)
                    std::this_thread::sleep_for(std::chrono::milliseconds{1});
                }
                return {static_cast<worker_id>(g), 0, real{double(g)}};
              },
              [](save_atom) { return std::string{}; },
          };
        };
  };
  auto member
      = [log](lsgd_member_actor::pointer) -> lsgd_member_actor::behavior_type {
    return {
        [](score_atom) { return score_msg{}; },
        [log](lead_msg& m) {
          std::lock_guard<std::mutex> guard{log->mtx};
          log->leads.push_back(m.global);
          return ack_atom::value;
        },
        [](pull_msg&) { return ack_atom::value; },
        [](fetch_msg&) { return params_msg{}; },
    };
  };
  leader_board_config bc;
  bc.opts.groups = 2;
  bc.opts.tau = 4;
  bc.opts.tau_g = 16;
  bc.workers = {sys.spawn(member), sys.spawn(member)};
  bc.groups = {sys.spawn(group(0)), sys.spawn(group(1))};
  bc.record = std::make_shared<lsgd_record>();
  bc.record->groups.resize(2);
  auto board = sys.spawn(leader_board, bc);
  caf::scoped_actor self{sys};
  auto wait_until = [](auto pred) {
    for (int i = 0; i < 10000 && !pred(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    return pred();
  };
  auto group0_rounds = [&] {
    std::lock_guard<std::mutex> guard{log->mtx};
    return log->rounds;
  };
  self->send(board, round_atom::value, std::uint64_t{8});
  REQUIRE(wait_until([&] { return group0_rounds().size() == 1; }));
  for (std::uint64_t t : {16, 32, 40})
    self->send(board, round_atom::value, t);
  // Answered behind the three triggers (one sender's messages keep their
  // order): the board has seen them all.
  bool fetched = false;
  self->request(board, std::chrono::seconds{10}, fetch_msg{})
      .receive([&](params_msg&) { fetched = true; },
               [&](caf::error& err) { FAIL(sys.render(err)); });
  REQUIRE(fetched);
  log->release = true;
  auto global_rounds = [&] {
    std::lock_guard<std::mutex> guard{bc.record->mtx};
    return bc.record->global_rounds;
  };
  CHECK(wait_until([&] { return global_rounds() == 1; }));
  // The board is idle again: a pause is answered at once.
  self->request(board, std::chrono::seconds{10}, pause_atom::value)
      .receive([](ack_atom) {},
               [&](caf::error& err) { FAIL(sys.render(err)); });
  CHECK(group0_rounds() == std::vector<std::uint64_t>{4, 16});
  {
    std::lock_guard<std::mutex> guard{bc.record->mtx};
    CHECK(bc.record->global_rounds == 1);
    CHECK(bc.record->busy_skipped == 2);
  }
  std::lock_guard<std::mutex> guard{log->mtx};
  CHECK(std::count(log->leads.begin(), log->leads.end(), true) == 1);
  self->send_exit(board, caf::exit_reason::user_shutdown);
}
