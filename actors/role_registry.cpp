#include "actors/role_registry.hpp"

#include <exception>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/uniform_type_info_map.hpp>

#include "messages/errors.hpp"
#include "optim/quote.hpp"

namespace troupe::actors {

namespace {

/// "(@u32, std::vector<@actor>, ...)" from the system's type names.
std::string render(caf::actor_system& sys,
                   const std::vector<caf::rtti_pair>& types) {
  std::string out = "(";
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += sys.types().portable_name(types[i]);
  }
  return out + ")";
}

std::vector<caf::rtti_pair> types_of(const caf::message& m) {
  std::vector<caf::rtti_pair> out;
  for (std::size_t i = 0; i < m.size(); ++i)
    out.push_back(m.type(i));
  return out;
}

} // namespace

role_context::role_context(caf::local_actor* self, const job_config& job,
                           std::string node,
                           std::function<void(const caf::actor&)> host)
    : self_(self), job_(job), node_(std::move(node)), host_(std::move(host)) {}

caf::actor role_context::host(caf::actor h) {
  if (host_ && h)
    host_(h);
  return h;
}

void role_registry::add(std::string name, std::vector<caf::rtti_pair> types,
                        std::function<bool(const caf::message&)> accepts,
                        role_fn fn) {
  if (name.empty())
    throw std::invalid_argument("a role needs a name");
  if (roles_.count(name) > 0)
    throw std::invalid_argument("role " + optim::quote(name)
                                + " is already registered");
  roles_.emplace(std::move(name),
                 role{std::move(types), std::move(accepts), std::move(fn)});
}

bool role_registry::contains(const std::string& name) const {
  return roles_.count(name) > 0;
}

std::vector<std::string> role_registry::names() const {
  std::vector<std::string> out;
  for (auto& [name, r] : roles_)
    out.push_back(name);
  return out;
}

caf::expected<caf::actor> role_registry::spawn(role_context& ctx,
                                               const std::string& name,
                                               const caf::message& args) const {
  auto it = roles_.find(name);
  if (it == roles_.end()) {
    std::string known;
    for (auto& n : names())
      known += (known.empty() ? "" : ", ") + n;
    return messages::make_error(messages::errc::unknown_role,
                                "node " + ctx.node() + " has no role "
                                    + optim::quote(name)
                                    + " (registered: " + known + ")");
  }
  const auto& r = it->second;
  if (!r.accepts(args)) {
    auto& sys = ctx.self()->system();
    return messages::make_error(messages::errc::bad_arguments,
                                "role '" + name + "' takes "
                                    + render(sys, r.types) + ", not "
                                    + render(sys, types_of(args)));
  }
  try {
    return r.fn(ctx, args);
  } catch (const std::exception& e) {
    return messages::make_error(messages::errc::spawn_failed,
                                "cannot spawn role '" + name + "' on node "
                                    + ctx.node() + ": " + e.what());
  }
}

std::shared_ptr<const role_registry> shared_roles() {
  static const auto roles = [] {
    auto r = std::make_shared<role_registry>();
    register_shared_roles(*r);
    return std::shared_ptr<const role_registry>{std::move(r)};
  }();
  return roles;
}

} // namespace troupe::actors
