#include "net/peer_link.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <mutex>
#include <netdb.h>
#include <set>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "messages/atoms.hpp"
#include "messages/errors.hpp"
#include "net/guard.hpp"
#include "optim/quote.hpp"

namespace troupe::net {

using messages::ack_atom;

std::string node_key(const caf::node_id& id) {
  std::vector<char> key;
  caf::binary_serializer sink{nullptr, key};
  if (auto err = sink(const_cast<caf::node_id&>(id)))
    return {};
  return {key.begin(), key.end()};
}

std::string local_address_toward(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  auto service = std::to_string(port == 0 ? 9 : port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &res) != 0)
    return {};
  std::string out;
  for (auto* a = res; a != nullptr && out.empty(); a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      continue;
    sockaddr_storage name{};
    socklen_t len = sizeof(name);
    char text[INET6_ADDRSTRLEN] = {};
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0
        && getsockname(fd, reinterpret_cast<sockaddr*>(&name), &len) == 0) {
      const void* addr
          = name.ss_family == AF_INET
                ? static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in*>(&name)->sin_addr)
                : static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in6*>(&name)->sin6_addr);
      if (inet_ntop(name.ss_family, addr, text, sizeof(text)) != nullptr)
        out = text;
    }
    close(fd);
  }
  freeaddrinfo(res);
  return out;
}

bool split_peer_address(const std::string& a, std::string& host,
                        std::uint16_t& port) {
  if (a.size() > 300)
    return false;
  try {
    auto e = parse_endpoint(a, "a peer address");
    if (e.host.empty() || e.port == 0)
      return false;
    host = e.host;
    port = e.port;
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

namespace {

/// Milliseconds between two knocks at a door that does not know this node
/// yet (its member list may arrive after this node's).
constexpr std::chrono::milliseconds knock_pause{250};
/// A knock's and a connect's timeout.
constexpr std::chrono::seconds link_timeout{15};

/// Members in one list, at most (a list is sent by the coordinator only).
constexpr std::size_t max_members = 4096;

/// The guard a door vouches to, while it exists; counters the tests read.
struct shared {
  std::mutex mtx;
  basp_guard* guard = nullptr;
  std::atomic<std::uint64_t> links{0}, vouched{0}, refused{0};

  void vouch(const std::string& key) {
    std::lock_guard<std::mutex> lock{mtx};
    if (guard != nullptr)
      guard->vouch(key);
  }
};

struct door_state {
  static inline const char* name = "peer_door";
  door_config config;
  std::shared_ptr<shared> sh;
  /// The nodes the coordinator listed as members.
  std::set<caf::node_id> members;
  /// Members this node knocked at, connects to or linked to.
  std::set<caf::node_id> linking;
  /// Links under way, and the size of the latest list.
  std::uint32_t pending = 0;
  std::uint32_t listed = 0;
};

using door_ptr = caf::stateful_actor<door_state>*;

/// One link attempt settled: once none is left, tells the registrar.
void settled(door_ptr self) {
  auto& st = self->state;
  if (st.pending > 0)
    --st.pending;
  if (st.pending == 0 && st.config.registrar)
    self->send(st.config.registrar, links_atom::value, st.listed);
}

void give_up(door_ptr self, const caf::actor& door, const std::string& address,
             const std::string& why) {
  self->state.linking.erase(door.node());
  settled(self);
  actors::detail::log().warn(
      "no direct link to the node at {} ({}): its traffic keeps going "
      "through the coordinator",
      optim::sanitize(address, 300), optim::sanitize(why, 300));
}

void connect_to(door_ptr self, const caf::actor& door,
                const std::string& address) {
  std::string host;
  std::uint16_t port = 0;
  if (!split_peer_address(address, host, port)) {
    give_up(self, door, address, "not HOST:PORT");
    return;
  }
  auto& sys = self->system();
  auto mm = self->state.config.tls ? sys.openssl_manager().actor_handle()
                                   : sys.middleman().actor_handle();
  self->request(mm, link_timeout, caf::connect_atom::value, host, port)
      .then(
          [self, door, address](const caf::node_id& nid,
                                const caf::strong_actor_ptr&,
                                const std::set<std::string>&) {
            if (nid != door.node()) {
              give_up(self, door, address, "another node answered there");
              return;
            }
            ++self->state.sh->links;
            actors::detail::log().info("direct link to the node at {}",
                                       optim::sanitize(address, 300));
            settled(self);
          },
          [self, door, address](const caf::error& err) {
            give_up(self, door, address, self->system().render(err));
          });
}

void knock(door_ptr self, const caf::actor& door, const std::string& address,
           std::uint32_t tries_left) {
  self->request(door, link_timeout, knock_atom::value, self->state.config.token)
      .then(
          [self, door, address](ack_atom) { connect_to(self, door, address); },
          [self, door, address, tries_left](const caf::error& err) {
            // A door that does not know this node yet says not_allowed;
            // anything else (a timeout, a lost node) ends the tries.
            if (err == messages::errc::not_allowed && tries_left > 1) {
              self->delayed_send(self, knock_pause, knock_atom::value, door,
                                 address, tries_left - 1);
              return;
            }
            give_up(self, door, address, self->system().render(err));
          });
}

caf::behavior peer_door(door_ptr self, door_config config,
                        std::shared_ptr<shared> sh) {
  self->state.config = std::move(config);
  self->state.sh = std::move(sh);
  return {
      // The coordinator's member list: link to the members listed first.
      [self](links_atom, const std::vector<caf::actor>& doors,
             const std::vector<std::string>& addresses) {
        auto& st = self->state;
        if (!actors::detail::from_node(self, st.config.coordinator)) {
          actors::detail::refuse(self, "the peer door", "links",
                                 "the coordinator's node");
          return;
        }
        if (doors.size() != addresses.size() || doors.size() > max_members)
          return;
        std::size_t own = doors.size();
        for (std::size_t i = 0; i < doors.size(); ++i) {
          if (!doors[i])
            continue;
          st.members.insert(doors[i].node());
          if (doors[i].node() == self->node())
            own = i;
        }
        st.listed = static_cast<std::uint32_t>(doors.size());
        ++st.pending; // this list itself, settled below
        for (std::size_t i = 0; own < doors.size() && i < own; ++i) {
          const auto& d = doors[i];
          if (!d || d.node() == self->node() || st.linking.count(d.node()) > 0)
            continue;
          st.linking.insert(d.node());
          ++st.pending;
          knock(self, d, addresses[i], st.config.knock_tries);
        }
        settled(self);
      },
      // A member asks this door to admit its connection.
      [self](knock_atom, const std::string& token) -> caf::result<ack_atom> {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        auto refuse = [&](const char* rule) -> caf::error {
          ++st.sh->refused;
          return actors::detail::refuse(self, "the peer door", "knock", rule);
        };
        if (!st.config.token.empty() && !tokens_equal(st.config.token, token))
          return refuse("a node with the job's token");
        if (sender == nullptr || sender->node() == self->node()
            || st.members.count(sender->node()) == 0)
          return refuse("a member the coordinator listed");
        st.sh->vouch(node_key(sender->node()));
        ++st.sh->vouched;
        return ack_atom::value;
      },
      // The next try of a knock.
      [self](knock_atom, const caf::actor& door, const std::string& address,
             std::uint32_t tries_left) {
        if (!actors::detail::from_here(self))
          return;
        knock(self, door, address, tries_left);
      },
  };
}

} // namespace

struct peer_port::impl {
  caf::actor_system* sys = nullptr;
  std::shared_ptr<shared> sh = std::make_shared<shared>();
  std::unique_ptr<basp_guard> guard;
  caf::actor door;
  std::string host;
  std::uint16_t port = 0;
};

peer_port::peer_port(caf::actor_system& sys, const link_options& link,
                     const endpoint& listen, const std::string& advertise,
                     door_config config)
    : impl_(std::make_unique<impl>()) {
  auto& d = *impl_;
  d.sys = &sys;
  config.tls = link.tls.enabled();
  d.door = sys.spawn(peer_door, std::move(config), d.sh);
  auto fail = [&](const std::string& why) {
    caf::anon_send_exit(d.door, caf::exit_reason::user_shutdown);
    return std::runtime_error("cannot open the peer port on " + listen.host
                              + ":" + std::to_string(listen.port) + ": " + why);
  };
  auto inner = sys.middleman().publish(d.door, 0, "127.0.0.1", true);
  if (!inner)
    throw fail(sys.render(inner.error()));
  guard_options g;
  g.registrar_id = d.door.id();
  g.tls = link.tls;
  try {
    d.guard = std::make_unique<basp_guard>(listen, *inner, g);
  } catch (const std::exception& e) {
    throw fail(e.what());
  }
  d.host = advertise;
  d.port = d.guard->port();
  std::lock_guard<std::mutex> lock{d.sh->mtx};
  d.sh->guard = d.guard.get();
}

peer_port::~peer_port() {
  auto& d = *impl_;
  {
    std::lock_guard<std::mutex> lock{d.sh->mtx};
    d.sh->guard = nullptr;
  }
  caf::anon_send_exit(d.door, caf::exit_reason::user_shutdown);
}

const caf::actor& peer_port::door() const noexcept {
  return impl_->door;
}

std::string peer_port::address() const {
  const auto& h = impl_->host;
  auto host = h.find(':') != std::string::npos ? "[" + h + "]" : h;
  return host + ":" + std::to_string(impl_->port);
}

std::uint64_t peer_port::links_made() const noexcept {
  return impl_->sh->links.load();
}

std::uint64_t peer_port::vouched() const noexcept {
  return impl_->sh->vouched.load();
}

std::uint64_t peer_port::refused() const noexcept {
  return impl_->sh->refused.load();
}

} // namespace troupe::net
