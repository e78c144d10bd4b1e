// Monitoring: the probes' counts are exact (what one actor sends, another
// receives), the cluster view's states follow from the snapshots (ok, stuck,
// lost, done, idle), and an application actor can carry a probe of its own.

#include <chrono>
#include <map>
#include <thread>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "actors/detail/log.hpp"
#include "actors/monitor.hpp"
#include "actors/probe.hpp"
#include "harness.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::actors;
using messages::actor_metrics;
using messages::node_metrics;

namespace {

std::uint64_t count_of(const std::vector<messages::type_count>& xs,
                       const std::string& type) {
  for (auto& x : xs)
    if (x.type == type)
      return x.count;
  return 0;
}

actor_metrics actor(std::string key, std::string name, std::string role,
                    bool expects_progress, std::int64_t progress_ago_ms) {
  actor_metrics a;
  a.key = std::move(key);
  a.name = std::move(name);
  a.role = std::move(role);
  a.expects_progress = expects_progress;
  a.progress_ago_ms = progress_ago_ms;
  a.age_ms = 60000;
  return a;
}

std::map<std::string, std::string> states(const nlohmann::json& j) {
  std::map<std::string, std::string> out;
  for (auto& a : j["actors"])
    out[a["name"].get<std::string>()] = a["state"].get<std::string>();
  return out;
}

} // namespace

TEST_CASE("a monitored Downpour job: every message sent is counted received") {
  const std::uint64_t seed = 5;
  INFO("seed " << seed);
  optim::lsq_options o;
  o.m = 256;
  o.d = 10;
  o.seed = seed;
  auto p = std::make_shared<const optim::lsq_problem>(optim::make_lsq(o));
  const std::uint64_t steps = 150;
  auto job = test::lsq_job(p, 2, 2, "sgd", 0.05, 16, steps, seed);
  auto view = std::make_shared<cluster_view>();
  job.monitor = view;
  job.monitor_interval = std::chrono::milliseconds{20};
  job.node_name = "here";
  auto out = run_job(std::move(job));
  REQUIRE(out["stop_reason"] == "steps done");
  // The probes of the finished actors stay listed; sum them by role.
  auto all = snapshot_probes();
  std::map<std::string, std::uint64_t> sent, received;
  std::map<std::string, int> roles;
  for (auto& a : all) {
    ++roles[a.role];
    CHECK(a.done);
    for (auto& t : a.sent)
      sent[t.type] += t.count;
    for (auto& t : a.received)
      received[t.type] += t.count;
  }
  CHECK(roles["worker"] == 2);
  CHECK(roles["shard"] == 2);
  CHECK(roles["coordinator"] == 1);
  CHECK(roles["evaluator"] == 1);
  CHECK(roles["monitor"] == 1);
  // Two workers, two shards: a push and a fetch per shard and step.
  CHECK(sent["push"] == 2 * 2 * steps);
  CHECK(received["push"] == sent["push"]);
  CHECK(received["fetch"] == sent["fetch"]); // workers' and the evaluator's
  CHECK(sent["params"] == sent["fetch"]);
  CHECK(received["params"] == sent["params"]);
  CHECK(received["progress"] == 2 * steps);
  CHECK(sent["progress"] == 2 * steps);
  for (auto& a : all) {
    if (a.role == "worker") {
      CHECK(count_of(a.received, "step") == steps - 1);
      CHECK(a.progress_ago_ms >= 0);
      CHECK(a.handler_ns > 0);
    }
    if (a.role == "shard") {
      REQUIRE(a.histograms.size() == 1);
      std::uint64_t n = 0;
      for (auto c : a.histograms[0].counts)
        n += c;
      CHECK(n == 2 * steps); // every push was applied
      // The shard heard from both workers, and how often.
      std::uint64_t from_workers = 0;
      for (auto& peer : a.peers)
        from_workers += peer.messages;
      CHECK(from_workers == a.messages_in);
    }
  }
  // The cluster monitor saw this process.
  auto j = view->to_json(false);
  REQUIRE(j["nodes"].size() == 1);
  CHECK(j["nodes"][0]["name"] == "here");
  CHECK(j["links"].size() >= 4); // each worker with each shard
}

TEST_CASE("an application actor's own probe counts and times its messages") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto probe = std::make_shared<probe_ref>();
  auto gate = std::make_shared<std::atomic<bool>>(false);
  auto a = sys.spawn([probe, gate](caf::event_based_actor* self) {
    *probe = make_probe(self, "sleeper", "app", true);
    return caf::behavior{
        [self, probe, gate](int x) {
          auto scope = on_message(probe->get(), self, msg_type::other, 4);
          if (x == 0) // the first message holds the actor while others queue
            while (!gate->load())
              std::this_thread::sleep_for(std::chrono::milliseconds{1});
          (*probe)->progress();
          (*probe)->gauge("last", x);
        },
    };
  });
  caf::scoped_actor self{sys};
  self->send(a, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds{50});
  for (int i = 1; i <= 20; ++i)
    self->send(a, i);
  std::this_thread::sleep_for(std::chrono::milliseconds{50});
  gate->store(true);
  self->send_exit(a, caf::exit_reason::user_shutdown);
  self->wait_for(a);
  auto m = (*probe)->snapshot(actor_probe::clock::now());
  CHECK(m.name == "sleeper");
  CHECK(count_of(m.received, "other") == 21);
  CHECK(m.bytes_in == 21 * 4);
  CHECK(m.mailbox_max >= 19); // 20 queued behind the first
  CHECK(m.handler_max_ns >= 40'000'000);
  REQUIRE(m.peers.size() == 1);
  CHECK(m.peers[0].messages == 21);
  REQUIRE(m.gauges.size() == 1);
  CHECK(m.gauges[0].value.value == 20);
}

TEST_CASE("probes switched off count nothing") {
  set_probes_enabled(false);
  actor_probe p{"x", "app", true};
  caf::strong_actor_ptr none;
  auto scope = on_message(&p, static_cast<caf::scheduled_actor*>(nullptr),
                          msg_type::push, 10);
  p.sent(msg_type::push, 10);
  p.progress();
  set_probes_enabled(true);
  auto m = p.snapshot(actor_probe::clock::now());
  CHECK(m.messages_in == 0);
  CHECK(m.messages_out == 0);
  CHECK(m.progress_ago_ms == -1);
}

TEST_CASE("message kinds registered by name are counted under their names") {
  auto gossip = message_kind("test-gossip");
  CHECK(message_kind("test-gossip") == gossip);
  CHECK(message_kind("push") == msg_type::push);
  CHECK(std::string{to_string(gossip)} == "test-gossip");
  actor_probe p{"x", "app", true};
  caf::strong_actor_ptr none;
  p.received(gossip, 7, none, 0);
  p.sent(gossip, 9);
  p.sent(gossip, 9);
  p.sent(static_cast<msg_type>(250), 1); // never handed out: other's
  auto m = p.snapshot(actor_probe::clock::now());
  auto count = [](const auto& list, const std::string& name) {
    for (const auto& c : list)
      if (c.type == name)
        return c.count;
    return std::uint64_t{0};
  };
  CHECK(count(m.received, "test-gossip") == 1);
  CHECK(count(m.sent, "test-gossip") == 2);
  CHECK(count(m.sent, "other") == 1);
  // Once every slot is taken, new names count as other.
  msg_type last = gossip;
  for (int i = 0; i < static_cast<int>(max_message_kinds); ++i)
    last = message_kind("test-kind-" + std::to_string(i));
  CHECK(last == msg_type::other);
  CHECK(message_kind("test-gossip") == gossip);
}

TEST_CASE("the cluster view: ok, stuck, lost, done and idle; links; rates") {
  cluster_view view{std::chrono::milliseconds{1000}};
  std::vector<std::string> joined, lost;
  view.on_node_up = [&](const std::string& n) { joined.push_back(n); };
  view.on_node_lost = [&](const std::string& n) { lost.push_back(n); };
  auto coord = actor("a/1", "coordinator", "coordinator", true, 10);
  auto shard = actor("a/2", "shard 0", "shard", true, 20);
  shard.peers = {{"b/1", 5, 30}, {"c/1", 5, 40}, {"x/9", 5, 1}};
  auto eval = actor("a/3", "evaluator", "evaluator", false, -1);
  auto fast = actor("b/1", "worker 0", "worker", true, 50);
  fast.gauges = {{"samples", messages::real{1000}}};
  auto slow = actor("c/1", "worker 1", "worker", true, 5000);
  auto gone = actor("c/2", "worker 2", "worker", true, 0);
  gone.done = true;
  view.update({"A", "a", {coord, shard, eval}, {}, {}});
  view.update({"B", "b", {fast}, {}, {}});
  view.update({"C", "c", {slow, gone}, {}, {}});
  CHECK(joined == std::vector<std::string>{"A", "B", "C"});
  auto j = view.to_json(true);
  auto s = states(j);
  CHECK(s["coordinator"] == "ok");
  CHECK(s["shard 0"] == "ok");
  CHECK(s["evaluator"] == "ok"); // answers requests: never stuck
  CHECK(s["worker 0"] == "ok");
  CHECK(s["worker 1"] == "stuck"); // 5 s without progress, limit 1 s
  CHECK(s["worker 2"] == "done");
  // Links between troupe actors only (x/9 is unknown), summed per pair.
  REQUIRE(j["links"].size() == 2);
  CHECK(j["links"][0]["from"] == "a/2");
  CHECK(j["links"][0]["to"] == "b/1");
  CHECK(j["links"][0]["messages"] == 30);
  // Throughput from two snapshots of a worker's sample count.
  std::this_thread::sleep_for(std::chrono::milliseconds{100});
  fast.gauges = {{"samples", messages::real{2000}}};
  view.update({"B", "b", {fast}, {}, {}});
  // Named: a range-for over a part of a temporary reads freed memory (ASan).
  auto snapshot = view.to_json(true);
  for (auto& a : snapshot["actors"])
    if (a["name"] == "worker 0") {
      double rate = a["samples_per_sec"];
      CHECK(rate > 1000.0 / 0.5); // 1000 samples in a little over 0.1 s
      CHECK(rate <= 1000.0 / 0.1);
    }
  // A node that stops answering: its snapshot ages, so a worker that made
  // progress 50 ms before goes stuck once the limit passes.
  view.unreachable("B");
  CHECK(view.to_json(true)["nodes"][1]["state"] == "unreachable");
  std::this_thread::sleep_for(std::chrono::milliseconds{1000});
  CHECK(states(view.to_json(true))["worker 0"] == "stuck");
  // A lost node's actors are lost, and a late answer does not revive it.
  view.lost("C");
  view.lost("C");
  CHECK(lost == std::vector<std::string>{"C"});
  view.update({"C", "c", {slow}, {}, {}});
  s = states(view.to_json(true));
  CHECK(s["worker 1"] == "lost");
  CHECK(s["worker 2"] == "done");
  // After the job, nothing is stuck.
  CHECK(states(view.to_json(false))["worker 0"] == "idle");
}

TEST_CASE("a node's messages out count what its peers received from it") {
  // The coordinator does not count its own sends; the workers count what
  // they received from it.
  cluster_view view;
  auto coord = actor("a/1", "coordinator", "coordinator", true, 10);
  auto w0 = actor("a/2", "worker 0", "worker", true, 10);
  w0.peers = {{"a/1", 5, 3}, {"a/2", 5, 99}}; // its own steps do not count
  w0.messages_out = 40;
  auto w1 = actor("a/3", "worker 1", "worker", true, 10);
  w1.peers = {{"a/1", 5, 4}, {"a/2", 5, 2}};
  view.update({"A", "a", {coord, w0, w1}, {}, {}});
  std::map<std::string, std::uint64_t> out;
  auto j = view.to_json(true);
  for (auto& a : j["actors"])
    out[a["name"].get<std::string>()] = a["messages_out"].get<std::uint64_t>();
  CHECK(out["coordinator"] == 7);
  CHECK(out["worker 0"] == 40); // its own count is larger than 2
  CHECK(out["worker 1"] == 0);
}

TEST_CASE("a node's use of its host and last log lines, capped and escaped") {
  // This process's own figures, read from /proc.
  auto u = read_process_usage();
  CHECK(u.rss_bytes > 1000000);
  CHECK(u.threads >= 1);
  CHECK(u.cpu_seconds.value >= 0);
  // A node monitor answers with them and with the log's last lines.
  actors::detail::log().info("monitor test line {}", 42);
  troupe::test::typed_config<> cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto mon = sys.spawn(node_monitor, std::string{"here:1"});
  node_metrics m;
  self->request(mon, std::chrono::seconds{5}, messages::metrics_atom::value)
      .receive([&](node_metrics& x) { m = std::move(x); },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(m.usage.rss_bytes > 1000000);
  REQUIRE(!m.log_tail.empty());
  CHECK(m.log_tail.size() <= messages::max_log_tail);
  CHECK(m.log_tail.back() == "troupe: monitor test line 42");
  self->send_exit(mon, caf::exit_reason::user_shutdown);
  // A hostile node's tail: 1000 lines of 10 KB with control characters.
  cluster_view view;
  std::vector<std::string> tail(1000, std::string(10000, 'x') + "\x1b[2J");
  tail.back() = "last \x1b[31mred";
  view.update({"H", "h", {}, {messages::real{1.0}, 1, 1, 0, 0}, tail});
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  view.update({"H", "h", {}, {messages::real{1.1}, 1, 1, 100000, 0}, tail});
  auto j = view.to_json(true)["nodes"][0];
  REQUIRE(j["log"].size() == messages::max_log_tail);
  for (auto& line : j["log"])
    CHECK(line.get<std::string>().size() <= messages::max_log_line + 40);
  auto last = j["log"].back().get<std::string>();
  CHECK(last.find('\x1b') == std::string::npos);
  CHECK(last.rfind("last ", 0) == 0);
  // Rates between the two answers: 0.1 s of CPU and 100000 bytes in about
  // 0.2 s.
  CHECK(j["cpu_cores"].get<double>() > 0.1);
  CHECK(j["cpu_cores"].get<double>() <= 0.5 + 1e-9);
  CHECK(j["net_rx_per_sec"].get<double>() > 100000 / 2.0);
  CHECK(j["net_rx_per_sec"].get<double>() <= 100000 / 0.2 + 1);
}
