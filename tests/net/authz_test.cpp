// Who may call what (docs/deployment.md): the join service answers `members`
// and `stop` to its own process only and never hands out a join token; a
// node agent obeys only the coordinator it joined. The remote cases fork a
// child that publishes a registrar on 127.0.0.1 like a coordinator; this
// process plays both an unauthenticated BASP client and a real node. Every
// wait has a timeout; the child is killed at the end.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <catch2/catch.hpp>

#include "actors/node_agent.hpp"
#include "algos/registry.hpp"
#include "messages/errors.hpp"
#include "net/registrar.hpp"
#include "net/system.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

constexpr auto timeout = 10s;
const std::string token = "s3cret-join-token";

/// The configuration of every actor system here (a job's defaults).
struct config : net::link_config {
  config() : net::link_config(net::link_options{}, 2) {
    set("logger.console", caf::atom("none"));
  }
};

net::registrar_config coordinator_settings() {
  net::link_options link;
  net::registrar_config rc;
  rc.expect = 1;
  rc.token = token;
  rc.heartbeat_ms = link.heartbeat_ms();
  rc.timeout_ms = link.timeout_ms();
  rc.spec = "the spec";
  rc.fingerprint = "fp";
  rc.setup_timeout = timeout;
  return rc;
}

hello_msg hello_with(std::string tok) {
  net::link_options link;
  return {wire_version,        "authz-test:1",   std::move(tok), 1, 0,
          link.heartbeat_ms(), link.timeout_ms()};
}

/// A node agent that builds any spec into an empty job with fingerprint fp.
actors::node_agent_config agent_settings(caf::node_id coordinator) {
  actors::node_agent_config c;
  c.build = [](const std::string&) { return actors::built_job{{}, "fp"}; };
  c.node_name = "authz-test:1";
  c.coordinator = std::move(coordinator);
  // Every role troupe node has (the algorithms' own too): registered or
  // not, a stranger is refused before the lookup.
  c.roles = algos::node_roles();
  return c;
}

/// What the coordinator's process saw, written back over the pipe.
struct coordinator_view {
  std::uint8_t agents = 0;    ///< members it was given
  std::uint8_t tokens = 0;    ///< of their hellos with a token
  std::uint8_t admitted = 0;  ///< on_admitted calls
  std::uint8_t same_node = 0; ///< of them naming the member's node
};

/// Body of the child: publishes a registrar, writes its port, and on each
/// byte from `in` asks it for the members and writes a coordinator_view.
/// Runs until `in` reaches EOF or 60 s pass. Never returns.
[[noreturn]] void run_coordinator(int in, int out) {
  {
    config cfg;
    caf::actor_system sys{cfg};
    auto rc = coordinator_settings();
    auto admitted = std::make_shared<std::vector<caf::node_id>>();
    rc.on_admitted
        = [admitted](const caf::node_id& n) { admitted->push_back(n); };
    auto reg = sys.spawn(net::registrar, std::move(rc));
    auto port = sys.middleman().publish(reg, 0, "127.0.0.1");
    std::uint16_t value = port ? *port : 0;
    if (write(out, &value, sizeof value) != sizeof value)
      _exit(2);
    for (;;) {
      pollfd pfd{in, POLLIN, 0};
      char cmd = 0;
      if (poll(&pfd, 1, 60'000) != 1 || read(in, &cmd, 1) != 1)
        break;
      coordinator_view v;
      caf::scoped_actor self{sys};
      self->request(reg, timeout, members_atom::value)
          .receive(
              [&](std::vector<caf::actor>& agents,
                  std::vector<hello_msg>& hellos) {
                v.agents = static_cast<std::uint8_t>(agents.size());
                for (auto& h : hellos)
                  v.tokens += h.token.empty() ? 0 : 1;
                for (auto& n : *admitted) {
                  ++v.admitted;
                  for (auto& a : agents)
                    v.same_node += a.node() == n ? 1 : 0;
                }
              },
              [&](caf::error&) {});
      if (write(out, &v, sizeof v) != sizeof v)
        break;
    }
    caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
  }
  _exit(0);
}

/// A forked coordinator process, killed on destruction.
class coordinator_process {
public:
  coordinator_process() {
    int to_child[2];
    int from_child[2];
    REQUIRE(pipe(to_child) == 0);
    REQUIRE(pipe(from_child) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      close(to_child[1]);
      close(from_child[0]);
      run_coordinator(to_child[0], from_child[1]);
    }
    close(to_child[0]);
    close(from_child[1]);
    to_child_ = to_child[1];
    from_child_ = from_child[0];
    REQUIRE(read_all(&port_, sizeof port_));
    std::printf("authz_test: coordinator %d publishes on 127.0.0.1:%u\n",
                static_cast<int>(pid_), static_cast<unsigned>(port_));
    REQUIRE(port_ != 0);
  }

  ~coordinator_process() {
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

  /// What the coordinator's own members request returns now.
  coordinator_view view() {
    char cmd = 'm';
    REQUIRE(write(to_child_, &cmd, 1) == 1);
    coordinator_view v;
    REQUIRE(read_all(&v, sizeof v));
    return v;
  }

private:
  bool read_all(void* dst, std::size_t n) {
    pollfd pfd{from_child_, POLLIN, 0};
    return poll(&pfd, 1, 20'000) == 1
           && read(from_child_, dst, n) == static_cast<ssize_t>(n);
  }

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::uint16_t port_ = 0;
};

/// The error a request answered with `Rs...` ends with (none if it was
/// answered with a value).
template <class... Rs, class Handle, class... Ts>
caf::error error_of(caf::scoped_actor& self, const Handle& dest, Ts... xs) {
  caf::error result;
  self->request(dest, timeout, xs...)
      .receive([&](Rs&...) {},
               [&](caf::error& err) { result = std::move(err); });
  return result;
}

/// Checks a refusal: not_allowed, naming `verb`, without the token.
void check_refused(caf::actor_system& sys, const caf::error& err,
                   const std::string& verb) {
  auto text = sys.render(err);
  INFO(verb << ": " << text);
  CHECK(err == errc::not_allowed);
  CHECK_THAT(text, Catch::Contains("'" + verb + "'"));
  CHECK(text.find(token) == std::string::npos);
}

/// Asks `reg` to let `hello` join with `agent`; returns "" if admitted, the
/// reason of a refusal (errc::join_refused), else the error rendered.
std::string join(caf::scoped_actor& self, const net::registrar_actor& reg,
                 const hello_msg& hello, const caf::actor& agent) {
  std::string answer = "(no answer)";
  self->request(reg, timeout, join_atom::value, hello, agent)
      .receive([&](ack_atom) { answer.clear(); },
               [&](caf::error& err) {
                 answer = err == errc::join_refused
                              ? context_of(err)
                              : "error: " + self->system().render(err);
               });
  return answer;
}

} // namespace

TEST_CASE("an unadmitted peer may only join; a real node joins after it",
          "[net][authz]") {
  coordinator_process coordinator; // forked before this process's threads
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto reg = sys.middleman().remote_actor<net::registrar_actor>(
      "127.0.0.1", coordinator.port());
  REQUIRE(reg);
  // An unauthenticated client: no member handles, no token, no closing.
  std::vector<caf::actor> leaked;
  self->request(*reg, timeout, members_atom::value)
      .receive(
          [&](std::vector<caf::actor>& agents, std::vector<hello_msg>&) {
            leaked = std::move(agents);
            FAIL("members answered to an unadmitted peer");
          },
          [&](caf::error& err) { check_refused(sys, err, "members"); });
  CHECK(leaked.empty());
  check_refused(sys, error_of<std::uint32_t>(self, *reg, stop_atom::value),
                "stop");
  // A node with the wrong token is refused for that reason, not because a
  // stranger closed the job.
  auto agent = sys.spawn(actors::node_agent, agent_settings(reg->node()));
  auto agent_handle = caf::actor_cast<caf::actor>(agent);
  CHECK(join(self, *reg, hello_with("wrong"), agent_handle)
        == "wrong join token");
  // The real node joins; no answer carries the token.
  auto answer = join(self, *reg, hello_with(token), agent_handle);
  CHECK(answer.empty());
  CHECK(answer.find(token) == std::string::npos);
  // Admitted, it still may not ask for the members or stop the service.
  check_refused(sys,
                error_of<std::vector<caf::actor>, std::vector<hello_msg>>(
                    self, *reg, members_atom::value),
                "members");
  check_refused(sys, error_of<std::uint32_t>(self, *reg, stop_atom::value),
                "stop");
  // The coordinator's own process gets the member, its hello without token,
  // and told the guard which node was admitted.
  auto view = coordinator.view();
  CHECK(view.agents == 1);
  CHECK(view.tokens == 0);
  CHECK(view.admitted == 1);
  CHECK(view.same_node == 1);
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
}

TEST_CASE("a node agent obeys only the coordinator it joined", "[net][authz]") {
  coordinator_process coordinator;
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto reg = sys.middleman().remote_actor<net::registrar_actor>(
      "127.0.0.1", coordinator.port());
  REQUIRE(reg);
  auto agent = sys.spawn(actors::node_agent, agent_settings(reg->node()));
  // The coordinator's setup request passes the agent's check.
  REQUIRE(
      join(self, *reg, hello_with(token), caf::actor_cast<caf::actor>(agent))
          .empty());
  // Any other node (here: the agent's own) is refused every verb, and the
  // agent stays up.
  check_refused(
      sys,
      error_of<std::string>(self, agent, setup_atom::value, std::string{"x"}),
      "setup");
  check_refused(sys,
                error_of<caf::actor>(self, agent, spawn_atom::value,
                                     std::string{"shard"},
                                     caf::make_message(std::uint32_t{0})),
                "spawn shard");
  check_refused(sys,
                error_of<caf::actor>(
                    self, agent, spawn_atom::value, std::string{"worker"},
                    caf::make_message(worker_id{0}, std::vector<caf::actor>{},
                                      caf::actor{})),
                "spawn worker");
  check_refused(
      sys,
      error_of<caf::actor>(
          self, agent, spawn_atom::value, std::string{"shadow_syncer"},
          caf::make_message(std::uint32_t{0}, std::vector<caf::actor>{},
                            std::vector<caf::actor>{})),
      "spawn shadow_syncer");
  check_refused(sys,
                error_of<caf::actor>(self, agent, spawn_atom::value,
                                     std::string{"lbfgs_shard"},
                                     caf::make_message(std::uint32_t{0})),
                "spawn lbfgs_shard");
  check_refused(sys,
                error_of<caf::actor>(
                    self, agent, spawn_atom::value, std::string{"lbfgs_worker"},
                    caf::make_message(worker_id{0}, std::vector<caf::actor>{},
                                      caf::actor{})),
                "spawn lbfgs_worker");
  // A role nobody registered: refused for the sender before any lookup.
  check_refused(sys,
                error_of<caf::actor>(self, agent, spawn_atom::value,
                                     std::string{"nope"}, caf::message{}),
                "spawn 'nope'");
  check_refused(sys, error_of(self, agent, stop_atom::value, std::string{"x"}),
                "stop");
  check_refused(sys, error_of<node_metrics>(self, agent, metrics_atom::value),
                "metrics");
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
}

TEST_CASE("in one process: members without tokens, an agent without "
          "coordinator obeys no one",
          "[net][authz]") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto rc = coordinator_settings();
  std::vector<caf::node_id> admitted;
  rc.on_admitted = [&](const caf::node_id& n) { admitted.push_back(n); };
  auto reg = sys.spawn(net::registrar, std::move(rc));
  auto agent = sys.spawn(actors::node_agent, agent_settings(sys.node()));
  CHECK(join(self, reg, hello_with(token), caf::actor_cast<caf::actor>(agent))
            .empty());
  self->request(reg, timeout, members_atom::value)
      .receive(
          [&](std::vector<caf::actor>& agents, std::vector<hello_msg>& hellos) {
            CHECK(agents.size() == 1);
            REQUIRE(hellos.size() == 1);
            CHECK(hellos[0].token.empty());
            CHECK(hellos[0].node == "authz-test:1");
          },
          [&](caf::error& err) { FAIL(sys.render(err)); });
  CHECK(admitted == std::vector<caf::node_id>{sys.node()});
  // An agent whose coordinator is unset obeys no one, its own process
  // included.
  auto lone = sys.spawn(actors::node_agent, agent_settings(caf::node_id{}));
  check_refused(
      sys,
      error_of<std::string>(self, lone, setup_atom::value, std::string{"x"}),
      "setup");
  check_refused(sys, error_of(self, lone, stop_atom::value, std::string{"x"}),
                "stop");
  caf::anon_send_exit(lone, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
  self->request(reg, timeout, stop_atom::value)
      .receive([](std::uint32_t) {},
               [&](caf::error& err) { FAIL(sys.render(err)); });
  caf::anon_send_exit(reg, caf::exit_reason::user_shutdown);
}
