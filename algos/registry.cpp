#include "algos/registry.hpp"

#include <mutex>
#include <stdexcept>

#include "actors/role_registry.hpp"
#include "algos/allreduce/allreduce.hpp"
#include "algos/diloco/diloco.hpp"
#include "algos/downpour/downpour.hpp"
#include "algos/dssync/dssync.hpp"
#include "algos/easgd/easgd.hpp"
#include "algos/gadmm/gadmm.hpp"
#include "algos/gaia/gaia.hpp"
#include "algos/lsgd/lsgd.hpp"
#include "algos/parle/parle.hpp"
#include "algos/sandblaster/sandblaster.hpp"
#include "algos/sgd/sgd.hpp"
#include "algos/sgp/sgp.hpp"
#include "algos/shadow/shadow.hpp"
#include "algos/sync/sync.hpp"
#include "optim/quote.hpp"

namespace troupe::algos {

namespace {

template <class T>
algorithm_factory make() {
  return [] { return std::make_shared<T>(); };
}

/// The built-in algorithms: one line each.
std::vector<algorithm_entry> builtin() {
  return {
      {"sgd", make<sgd>()},           {"downpour", make<downpour>()},
      {"sync", make<sync>()},         {"easgd", make<easgd>()},
      {"lsgd", make<lsgd>()},         {"sgp", make<sgp>()},
      {"dssync", make<dssync>()},     {"shadow", make<shadow>()},
      {"lbfgs", make<sandblaster>()}, {"allreduce", make<allreduce>()},
      {"diloco", make<diloco>()},     {"parle", make<parle>()},
      {"gadmm", make<gadmm>()},       {"gaia", make<gaia>()},
  };
}

struct registry {
  std::mutex mtx;
  std::vector<algorithm_entry> entries = builtin();
};

registry& the_registry() {
  static registry r;
  return r;
}

} // namespace

void register_algorithm(algorithm_entry entry) {
  if (entry.name.empty() || !entry.make)
    throw std::invalid_argument("an algorithm needs a name and a factory");
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock{r.mtx};
  for (auto& e : r.entries)
    if (e.name == entry.name) {
      e = std::move(entry);
      return;
    }
  r.entries.push_back(std::move(entry));
}

std::vector<algorithm_entry> registered_algorithms() {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock{r.mtx};
  return r.entries;
}

bool has_algorithm(const std::string& name) {
  for (const auto& e : registered_algorithms())
    if (e.name == name)
      return true;
  return false;
}

algorithm_handle make_algorithm(const std::string& name) {
  auto entries = registered_algorithms();
  std::string known;
  for (const auto& e : entries) {
    if (e.name == name)
      return e.make();
    known += (known.empty() ? "" : ", ") + e.name;
  }
  throw std::invalid_argument("unknown algorithm " + optim::quote(name) + " ("
                              + known + ")");
}

std::vector<std::string>
algorithms_where(const std::function<bool(const algorithm&)>& holds) {
  std::vector<std::string> names;
  for (const auto& e : registered_algorithms())
    if (holds(*e.make()))
      names.push_back(e.name);
  return names;
}

std::string joined_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

void register_roles(actors::role_registry& roles) {
  actors::register_shared_roles(roles);
  for (const auto& e : registered_algorithms())
    e.make()->add_roles(roles);
}

std::shared_ptr<const actors::role_registry> node_roles() {
  auto roles = std::make_shared<actors::role_registry>();
  register_roles(*roles);
  return roles;
}

} // namespace troupe::algos
