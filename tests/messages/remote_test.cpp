// A real process boundary: the test forks a child with its own actor system
// and middleman, publishes an echo actor on 127.0.0.1 (port 0), and checks
// that special float values and every registered message type come back
// bit-exact and non-empty. Every wait has a timeout; the child is killed at
// the end.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <catch2/catch.hpp>

#include "messages/allreduce.hpp"
#include "messages/atoms.hpp"
#include "messages/compressed.hpp"
#include "messages/consensus.hpp"
#include "messages/control.hpp"
#include "messages/gossip.hpp"
#include "messages/join.hpp"
#include "messages/lbfgs.hpp"
#include "messages/messages.hpp"
#include "messages/metrics.hpp"
#include "messages/registry.hpp"

using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

constexpr auto timeout = 10s;

float from_bits(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

std::vector<float> special_values() {
  using lim = std::numeric_limits<float>;
  return {from_bits(0x7fc00000u), from_bits(0x7fc12345u),
          from_bits(0xffc00001u), lim::infinity(),
          -lim::infinity(),       -0.0f,
          lim::denorm_min(),      -lim::denorm_min(),
          from_bits(0x007fffffu), lim::max(),
          lim::lowest(),          1.5f};
}

/// Configuration shared by both processes.
struct config : caf::actor_system_config {
  config() {
    register_types(*this);
    add_message_type<std::vector<float>>("std::vector<float>");
    load<caf::io::middleman>();
    set("scheduler.max-threads", 2);
    set("logger.console", caf::atom("none"));
  }
};

/// Echoes each message type back; an empty or unknown message gets an error.
caf::behavior echo() {
  return {
      [](echo_atom, const tensor& x) { return x; },
      [](echo_atom, const push_msg& x) { return x; },
      [](echo_atom, const fetch_msg& x) { return x; },
      [](echo_atom, const params_msg& x) { return x; },
      [](echo_atom, const hello_msg& x) { return x; },
      [](echo_atom, const real& x) { return x; },
      [](echo_atom, const progress_msg& x) { return x; },
      [](echo_atom, const worker_stats& x) { return x; },
      [](echo_atom, const worker_pushes& x) { return x; },
      [](echo_atom, const shard_stats& x) { return x; },
      [](echo_atom, const eval_msg& x) { return x; },
      [](echo_atom, const node_metrics& x) { return x; },
      [](echo_atom, const score_msg& x) { return x; },
      [](echo_atom, const lead_msg& x) { return x; },
      [](echo_atom, const pull_msg& x) { return x; },
      [](echo_atom, const gossip_msg& x) { return x; },
      [](echo_atom, const group_msg& x) { return x; },
      [](echo_atom, const delta_msg& x) { return x; },
      [](echo_atom, const shadow_msg& x) { return x; },
      [](echo_atom, const compressed_push_msg& x) { return x; },
      [](echo_atom, const compressed_gossip_msg& x) { return x; },
      [](echo_atom, const lbfgs_vec_msg& x) { return x; },
      [](echo_atom, const lbfgs_point_msg& x) { return x; },
      [](echo_atom, const lbfgs_grad_msg& x) { return x; },
      [](echo_atom, const lbfgs_done_msg& x) { return x; },
      [](echo_atom, const cede_msg& x) { return x; },
      [](echo_atom, const ring_chunk_msg& x) { return x; },
      [](echo_atom, const peer_list_msg& x) { return x; },
      [](echo_atom, const dual_msg& x) { return x; },
      [](echo_atom, const mirror_msg& x) { return x; },
      [](echo_atom, const std::vector<float>& x) { return x; },
  };
}

/// Body of the child: publishes `echo`, writes the port to `out`, and runs
/// until `in` reaches EOF or 60 s pass. Never returns.
[[noreturn]] void run_child(int in, int out) {
  {
    config cfg;
    caf::actor_system sys{cfg};
    auto actor = sys.spawn(echo);
    auto port = sys.middleman().publish(actor, 0, "127.0.0.1");
    std::uint16_t value = port ? *port : 0;
    if (write(out, &value, sizeof value) != sizeof value)
      _exit(2);
    pollfd pfd{in, POLLIN, 0};
    poll(&pfd, 1, 60'000);
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }
  _exit(0);
}

/// A forked echo process, killed on destruction.
class child_process {
public:
  child_process() {
    int to_child[2];
    int from_child[2];
    REQUIRE(pipe(to_child) == 0);
    REQUIRE(pipe(from_child) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      close(to_child[1]);
      close(from_child[0]);
      run_child(to_child[0], from_child[1]);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_child_ = to_child[1];
    from_child_ = from_child[0];
    pollfd pfd{from_child_, POLLIN, 0};
    REQUIRE(poll(&pfd, 1, 10'000) == 1);
    REQUIRE(read(from_child_, &port_, sizeof port_) == sizeof port_);
    std::printf("remote_test: child %d publishes on 127.0.0.1:%u\n",
                static_cast<int>(pid_), static_cast<unsigned>(port_));
    REQUIRE(port_ != 0);
  }

  ~child_process() {
    close(to_child_); // EOF asks the child to exit
    close(from_child_);
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_)
        return;
      usleep(100'000);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  std::uint16_t port() const {
    return port_;
  }

private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::uint16_t port_ = 0;
};

/// Sends `x` to the remote echo actor and returns what came back.
template <class T>
T round_trip(caf::scoped_actor& self, const caf::actor& remote, const T& x) {
  T result;
  bool ok = false;
  self->request(remote, timeout, echo_atom::value, x)
      .receive([&](const T& y) { result = y, ok = true; },
               [&](const caf::error& err) {
                 FAIL("remote echo failed: " << self->system().render(err));
               });
  REQUIRE(ok);
  return result;
}

std::uint32_t to_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

/// A child process publishing the echo actor, and a handle on it from an
/// actor system of this process.
struct remote_peer {
  child_process child;
  config cfg;
  caf::actor_system sys{cfg};
  caf::actor remote = connect();
  caf::scoped_actor self{sys};

  caf::actor connect() {
    auto handle = sys.middleman().remote_actor("127.0.0.1", child.port());
    REQUIRE(handle);
    return *handle;
  }
};

} // namespace

/// A node_metrics with every field set (one actor, one of each list).
static node_metrics sample_node_metrics() {
  actor_metrics a;
  a.key = "node/7";
  a.name = "worker 3";
  a.role = "worker";
  a.activity = "computing";
  a.expects_progress = true;
  a.messages_in = 10;
  a.messages_out = 11;
  a.bytes_in = 12;
  a.bytes_out = 13;
  a.handler_ns = 14;
  a.handler_max_ns = 15;
  a.errors = 1;
  a.mailbox = 2;
  a.mailbox_max = 3;
  a.age_ms = 100;
  a.progress_ago_ms = 5;
  a.received = {{"params", 4, 400}};
  a.sent = {{"push", 4, 500}};
  a.gauges = {{"samples", real{-0.0}}};
  a.histograms = {{"push_staleness", {0, 1, 2}, {1, 2, 3, 4}, real{7.5}}};
  a.peers = {{"node/8", 3, 4}};
  return {"host:1",
          "node",
          {a},
          {real{1.25}, 1u << 20, 9, 1234, 5678},
          {"troupe node: joined", "troupe node: warning: \x01"}};
}

TEST_CASE("special floats and every message type cross a process boundary",
          "[messages][remote]") {
  remote_peer peer;
  auto& self = peer.self;
  const auto& remote = peer.remote;

  push_msg push{3, 17, 5, 4096, 8, 64, tensor{special_values()}};
  auto back = round_trip(self, remote, push);
  REQUIRE(back.values.size() == push.values.size());
  for (std::size_t i = 0; i < push.values.size(); ++i) {
    INFO("element " << i);
    CHECK(to_bits(back.values[i]) == to_bits(push.values[i]));
  }
  CHECK(back == push);

  // One value of each registered type; the count keeps this list honest.
  CHECK(registered_type_names().size() == 34);
  CHECK(round_trip(self, remote, tensor{special_values()})
        == tensor{special_values()});
  fetch_msg fetch{3, 4096, 12, 8};
  CHECK(round_trip(self, remote, fetch) == fetch);
  params_msg params{9, 4096, tensor{special_values()}};
  CHECK(round_trip(self, remote, params) == params);
  hello_msg hello{wire_version, "node-b", "token", 3, 1, 100, 1000};
  CHECK(round_trip(self, remote, hello) == hello);

  // Control messages have no operator==; their printed form shows every
  // field, doubles as bit patterns, so equal strings mean equal bits.
  auto same = [&](const auto& x) {
    CHECK(to_string(round_trip(self, remote, x)) == to_string(x));
  };
  auto nan = special_values()[0];
  real r{static_cast<double>(nan)};
  CHECK(std::isnan(round_trip(self, remote, r).value));
  CHECK(round_trip(self, remote, real{-0.0}).value == 0.0);
  CHECK(std::signbit(round_trip(self, remote, real{-0.0}).value));
  same(progress_msg{2, 10, 64, real{std::numeric_limits<double>::infinity()}});
  worker_stats ws;
  ws.worker = 1;
  ws.steps = 2;
  ws.samples = 3;
  ws.messages = 4;
  ws.bytes = 5;
  ws.compute_ns = 6;
  ws.wait_ns = 7;
  ws.error = "worker 1: diverged";
  ws.weight = real{0.5};
  ws.residual_norm = real{2.5};
  same(ws);
  worker_pushes wp{4, 10, 1, 2, 3};
  same(wp);
  shard_stats ss;
  ss.shard = 1;
  ss.staleness_histogram = {5, 3, 1};
  ss.workers = {wp, worker_pushes{5, 1, 0, 0, 0}};
  same(ss);
  same(eval_msg{real{0.25}, real{0.875}, 10000, 42, "00ff00ff00ff00ff"});
  same(sample_node_metrics());
  same(score_msg{3, 120, real{nan}});
  same(score_msg{1, 7, real{0.125}});
  same(lead_msg{9, true, 0.1, {}});
  pull_msg pull{9, false, 2, 0.25, tensor{special_values()}};
  auto pulled = round_trip(self, remote, pull);
  CHECK(to_string(pulled) == to_string(pull));
  CHECK(pulled.values == pull.values);
  // Gossip payloads: compare the printed header and the exact bits.
  auto same_payload = [&](const auto& x, auto values_of) {
    auto back = round_trip(self, remote, x);
    CHECK(to_string(back) == to_string(x));
    CHECK(values_of(back) == values_of(x));
  };
  auto values = [](const auto& m) { return m.values; };
  same_payload(gossip_msg{3, 41, 0.5, tensor{special_values()}}, values);
  same_payload(group_msg{7, 12, tensor{special_values()}}, values);
  same_payload(dual_msg{6, 30, tensor{special_values()}}, values);
  same_payload(delta_msg{5, tensor{special_values()}}, values);
  same_payload(ring_chunk_msg{2, 17, 0, 1, 3, 48, tensor{special_values()}},
               values);
  auto mirror = round_trip(self, remote,
                           mirror_msg{1, 7, 3, 20, std::string(24, '\x05')});
  CHECK(mirror.group == 1);
  CHECK(mirror.seq == 7);
  CHECK(mirror.packed == std::string(24, '\x05'));
  auto peers
      = round_trip(self, remote, peer_list_msg{{1, 5, 9}, {{}, {}, {}}, {}});
  CHECK(peers.ranks == std::vector<worker_id>{1, 5, 9});
  CHECK(peers.handles.size() == 3);
  CHECK(peers.all.size() == 0);
  // A handle table: the remote end reads a table of its own, with the
  // handles (the remote actor's comes back as itself) and the gaps.
  handle_table table;
  table.handles = std::make_shared<const std::vector<caf::actor>>(
      std::vector<caf::actor>{{}, remote, {}});
  auto all = round_trip(self, remote, peer_list_msg{{}, {}, table});
  REQUIRE(all.all.size() == 3);
  CHECK(all.all.handles != table.handles);
  CHECK_FALSE(all.all[0]);
  CHECK(all.all[1] == remote);
  CHECK_FALSE(all.all[2]);
  CHECK(to_string(all) == "peer_list_msg(all 3 workers)");
  same_payload(shadow_msg{1, 9, 4, tensor{special_values()}},
               [](const shadow_msg& m) { return m.sum; });
  // Compressed blocks: every byte value, NUL included, crosses intact.
  std::string block;
  for (int b = 0; b < 256; ++b)
    block.push_back(static_cast<char>(b));
  auto packed = [](const auto& m) { return m.packed; };
  same_payload(compressed_push_msg{2, 5, 7, 64, 3, 32, 1000, block}, packed);
  same_payload(compressed_gossip_msg{4, 11, 0.25, 0.5, 1000, block}, packed);
  // Sandblaster L-BFGS: raw doubles cross as the same bytes.
  same(lbfgs_vec_msg{2, 7, 9, real{-0.5}});
  same(lbfgs_done_msg{3, 12, 40, real{nan}, 250});
  std::vector<double> xs{1.5, -0.0, 1e-300, -7.25};
  auto raw = [](const auto& m) { return m.values; };
  same_payload(lbfgs_point_msg{12, pack_doubles(xs.data(), xs.size())}, raw);
  same_payload(lbfgs_grad_msg{12, 40, 250, block}, raw);
  // A node joining: a worker's ceded steps and examples.
  same_payload(cede_msg{3, 120, {0, 7, ~std::uint64_t{0}}},
               [](const cede_msg& m) { return m.examples; });
}

TEST_CASE("4 MB tensor round trip throughput versus std::vector<float>",
          "[.bench][remote]") {
  remote_peer peer;
  auto& self = peer.self;
  const auto& remote = peer.remote;
  constexpr std::size_t n = (4u << 20) / sizeof(float);
  constexpr int reps = 20;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(i % 1000) * 0.25f; // finite: see design.md
  auto measure = [&](auto payload, const char* label) {
    round_trip(self, remote, payload); // warm-up
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      round_trip(self, remote, payload);
    std::chrono::duration<double> took
        = std::chrono::steady_clock::now() - start;
    double bytes = 2.0 * reps * n * sizeof(float); // there and back
    std::printf("%-20s %8.3f GB/s (%d round trips of 4 MB, %.3f s)\n", label,
                bytes / took.count() / 1e9, reps, took.count());
  };
  measure(tensor{values}, "tensor (raw block)");
  measure(values, "std::vector<float>");
}
