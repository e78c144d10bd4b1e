#pragma once

// The roles a node agent spawns by name: one spawn verb, (spawn, role, args),
// instead of one verb per role. A role is registered once with its argument
// types; the agent checks the arguments against them before it spawns. The
// roles every algorithm shares register from one explicit function
// (register_shared_roles, no static initialization: a static library drops
// unreferenced objects); an algorithm's own roles come from its folder
// (algos::algorithm::add_roles, collected by algos::register_roles), and a
// user's node binary adds its own roles the same way before it joins, so a
// user's role deploys like a built-in one.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/expected.hpp>
#include <caf/local_actor.hpp>
#include <caf/message.hpp>
#include <caf/rtti_pair.hpp>

#include "actors/coordinator.hpp"

namespace troupe::actors {

/// What a role's spawn function may use: the hosting actor (spawn from it,
/// then host() the result), the job built from the coordinator's spec and
/// the node's name.
class role_context {
public:
  /// `host` links a spawned role to `self` and records it (node_agent.cpp).
  role_context(caf::local_actor* self, const job_config& job, std::string node,
               std::function<void(const caf::actor&)> host);

  /// The actor that spawns the role (the node agent).
  caf::local_actor* self() const noexcept {
    return self_;
  }

  /// The job this node set up.
  const job_config& job() const noexcept {
    return job_;
  }

  /// This node's name (host:pid).
  const std::string& node() const noexcept {
    return node_;
  }

  /// Hands a spawned role to the host: linked to it, it ends with the job
  /// (and with the host). Returns `h`.
  caf::actor host(caf::actor h);

private:
  caf::local_actor* self_;
  const job_config& job_;
  std::string node_;
  std::function<void(const caf::actor&)> host_;
};

/// Spawns a role from its (already checked) arguments and hosts it; throws a
/// std::exception naming the reason if it cannot.
using role_fn
    = std::function<caf::actor(role_context&, const caf::message& args)>;

/// Role names to spawn functions with their argument types.
class role_registry {
public:
  /// Registers role `name` whose arguments are (Ts...): `fn(ctx, const
  /// Ts&...)` spawns it and returns ctx.host(handle). Throws
  /// std::invalid_argument if the name is empty or taken.
  template <class... Ts, class F>
  void register_role(std::string name, F fn) {
    add(
        std::move(name), {caf::make_rtti_pair<Ts>()...},
        [](const caf::message& m) { return m.match_elements<Ts...>(); },
        [fn = std::move(fn)](role_context& ctx, const caf::message& args) {
          return call<Ts...>(fn, ctx, args, std::index_sequence_for<Ts...>{});
        });
  }

  /// The same with the argument check spelled out: `accepts` says whether
  /// `args` fit `types` (shown in the error when they do not).
  void add(std::string name, std::vector<caf::rtti_pair> types,
           std::function<bool(const caf::message&)> accepts, role_fn fn);

  /// Whether role `name` is registered.
  bool contains(const std::string& name) const;

  /// The registered names, sorted.
  std::vector<std::string> names() const;

  /// Spawns role `name` with `args`. Errors: messages::errc::unknown_role
  /// naming the role and the registered ones; errc::bad_arguments naming
  /// the role, its argument types and the given ones; caf::sec::runtime_error
  /// with the reason the role's function gave.
  caf::expected<caf::actor> spawn(role_context& ctx, const std::string& name,
                                  const caf::message& args) const;

private:
  struct role {
    std::vector<caf::rtti_pair> types;
    std::function<bool(const caf::message&)> accepts;
    role_fn fn;
  };

  template <class... Ts, class F, std::size_t... Is>
  static caf::actor call(const F& fn, role_context& ctx,
                         const caf::message& args, std::index_sequence<Is...>) {
    return fn(ctx, args.get_as<Ts>(Is)...);
  }

  std::map<std::string, role> roles_;
};

/// Registers the roles every algorithm shares under their stable names:
/// "shard" (index i) and "worker" (rank w, shard handles in shard order,
/// coordinator), configured from the job exactly as in the coordinator's
/// own process (roles.hpp). The algorithms' own roles are added by
/// algos::register_roles (algos/registry.hpp).
void register_shared_roles(role_registry& roles);

/// A registry holding the shared roles only (built on first use).
std::shared_ptr<const role_registry> shared_roles();

} // namespace troupe::actors
