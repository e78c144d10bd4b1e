// The job spec a coordinator sends to its nodes: the job's common options
// and the algorithm's own, as JSON, so a node builds exactly the job the
// coordinator describes. The spec is written from the options the flags
// bind (add_job_flags and the algorithm's bind()), not from a hand list: an
// option with a flag always travels.

#include <stdexcept>

#include <caf/config_option_set.hpp>
#include <caf/config_value.hpp>

#include "algos/registry.hpp"
#include "apps/train_command.hpp"
#include "optim/quote.hpp"

namespace troupe::apps {

namespace {

/// A flag's name as a spec key: "max-seconds" -> "max_seconds".
std::string key_of(const caf::config_option& opt) {
  std::string key{opt.long_name().data(), opt.long_name().size()};
  for (auto& c : key)
    if (c == '-')
      c = '_';
  return key;
}

nlohmann::json to_json(const caf::config_option& opt) {
  auto value = opt.get();
  if (!value)
    return nullptr;
  if (auto* x = caf::get_if<caf::config_value::integer>(&*value))
    return *x;
  if (auto* x = caf::get_if<caf::config_value::boolean>(&*value))
    return *x;
  if (auto* x = caf::get_if<caf::config_value::real>(&*value))
    return *x;
  if (auto* x = caf::get_if<caf::config_value::string>(&*value))
    return *x;
  throw std::logic_error("job spec: option --" + key_of(opt)
                         + " has a type the spec cannot carry");
}

/// The value `v` of spec key `key` as `opt` takes it, or a refusal.
caf::config_value from_json(const caf::config_option& opt,
                            const std::string& key, const nlohmann::json& v) {
  auto refuse = [&] {
    return std::invalid_argument(
        "not a job spec: " + key + " is " + optim::quote(v.dump()) + ", not a "
        + std::string{opt.type_name().data(), opt.type_name().size()});
  };
  caf::config_value out;
  if (v.is_boolean())
    out = caf::config_value{v.get<bool>()};
  else if (v.is_number_unsigned() || v.is_number_integer()) {
    if (v.is_number_unsigned()
        && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw refuse();
    out = caf::config_value{v.get<std::int64_t>()};
  } else if (v.is_number_float())
    out = caf::config_value{v.get<double>()};
  else if (v.is_string())
    out = caf::config_value{v.get<std::string>()};
  else
    throw refuse();
  // An integer where a real is taken is fine; anything else must match.
  if (opt.check(out)) {
    if (auto* i = caf::get_if<caf::config_value::integer>(&out)) {
      caf::config_value real{static_cast<double>(*i)};
      if (!opt.check(real))
        return real;
    }
    throw refuse();
  }
  // A count takes no negative number (CAF checks only the type).
  auto previous = opt.get();
  if (auto* i = caf::get_if<caf::config_value::integer>(&out);
      i && *i < 0 && previous) {
    auto type = std::string{opt.type_name().data(), opt.type_name().size()};
    if (type.find("uint") != std::string::npos
        || type.find("unsigned") != std::string::npos)
      throw refuse();
  }
  return out;
}

/// The spec's options bound to `o` (its common options and its
/// algorithm's).
void bind_spec(option_parser& p, train_options& o) {
  add_job_flags(p, o);
  o.algorithm->bind(p.options());
}

} // namespace

std::string to_spec(const train_options& options) {
  auto o = options;
  o.algorithm = options.algorithm ? options.algorithm->clone() : nullptr;
  select_algorithm(o);
  option_parser p{"job spec"};
  bind_spec(p, o);
  nlohmann::json out = nlohmann::json::object();
  out["algo"] = o.algo;
  for (const auto& opt : p.options()) {
    auto key = key_of(opt);
    if (key == "config")
      continue;
    if (out.contains(key))
      throw std::logic_error("job spec: two options named " + key);
    out[key] = to_json(opt);
  }
  return out.dump();
}

train_options from_spec(const std::string& spec) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(spec);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("not a job spec: " + optim::sanitize(e.what()));
  }
  if (!j.is_object())
    throw std::invalid_argument("not a job spec: not a JSON object");
  train_options o;
  if (j.contains("algo")) {
    if (!j["algo"].is_string())
      throw std::invalid_argument("not a job spec: algo is not a name");
    o.algo = j["algo"].get<std::string>();
  }
  if (!algos::has_algorithm(o.algo))
    throw std::invalid_argument("not a job spec: unknown algorithm "
                                + optim::quote(o.algo)
                                + " (a node of another build?)");
  select_algorithm(o);
  option_parser p{"job spec"};
  bind_spec(p, o);
  for (const auto& [key, value] : j.items()) {
    if (key == "algo")
      continue;
    const caf::config_option* opt = nullptr;
    for (const auto& candidate : p.options())
      if (key_of(candidate) == key && key != "config")
        opt = &candidate;
    if (opt == nullptr)
      throw std::invalid_argument("not a job spec: " + optim::quote(key)
                                  + " is not an option of --algo=" + o.algo
                                  + " (a node of another build?)");
    opt->store(from_json(*opt, key, value));
  }
  return o;
}

} // namespace troupe::apps
