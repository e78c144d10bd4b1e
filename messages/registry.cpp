#include "messages/registry.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/make_config_option.hpp>

#include "messages/allreduce.hpp"
#include "messages/compressed.hpp"
#include "messages/consensus.hpp"
#include "messages/control.hpp"
#include "messages/errors.hpp"
#include "messages/gossip.hpp"
#include "messages/join.hpp"
#include "messages/lbfgs.hpp"
#include "messages/messages.hpp"
#include "messages/metrics.hpp"
#include "messages/pipeline.hpp"

namespace troupe::messages {

// CAF 0.17.6 accepts both add_message_type<T>(name) and type-ID blocks, and
// both end in the same add_message_type_impl: the wire carries the name given
// here. add_message_type is used because the name is explicit and stable
// (renaming a namespace does not change the wire) and it also registers
// std::vector<T>; a type-ID block derives the name from the C++ spelling and
// its compile-time check needs CAF_ENABLE_TYPE_ID_CHECKS, off in Debian's
// build. An unregistered type still compiles and arrives as an empty message,
// which tests/messages/remote_test.cpp guards against.

namespace {

/// Carries a type to a generic lambda.
template <class T>
struct type_tag {
  using type = T;
};

/// Calls `f(type_tag<T>{}, wire_name)` for every message type: the one list.
template <class F>
void for_each_type(F f) {
  f(type_tag<tensor>{}, "troupe::tensor");
  f(type_tag<push_msg>{}, "troupe::push_msg");
  f(type_tag<fetch_msg>{}, "troupe::fetch_msg");
  f(type_tag<params_msg>{}, "troupe::params_msg");
  f(type_tag<hello_msg>{}, "troupe::hello_msg");
  f(type_tag<real>{}, "troupe::real");
  f(type_tag<progress_msg>{}, "troupe::progress_msg");
  f(type_tag<worker_stats>{}, "troupe::worker_stats");
  f(type_tag<worker_pushes>{}, "troupe::worker_pushes");
  f(type_tag<shard_stats>{}, "troupe::shard_stats");
  f(type_tag<eval_msg>{}, "troupe::eval_msg");
  f(type_tag<node_metrics>{}, "troupe::node_metrics");
  f(type_tag<score_msg>{}, "troupe::score_msg");
  f(type_tag<lead_msg>{}, "troupe::lead_msg");
  f(type_tag<pull_msg>{}, "troupe::pull_msg");
  f(type_tag<gossip_msg>{}, "troupe::gossip_msg");
  f(type_tag<group_msg>{}, "troupe::group_msg");
  f(type_tag<delta_msg>{}, "troupe::delta_msg");
  f(type_tag<shadow_msg>{}, "troupe::shadow_msg");
  f(type_tag<compressed_push_msg>{}, "troupe::compressed_push_msg");
  f(type_tag<compressed_gossip_msg>{}, "troupe::compressed_gossip_msg");
  f(type_tag<lbfgs_vec_msg>{}, "troupe::lbfgs_vec_msg");
  f(type_tag<lbfgs_point_msg>{}, "troupe::lbfgs_point_msg");
  f(type_tag<lbfgs_grad_msg>{}, "troupe::lbfgs_grad_msg");
  f(type_tag<lbfgs_done_msg>{}, "troupe::lbfgs_done_msg");
  f(type_tag<cede_msg>{}, "troupe::cede_msg");
  f(type_tag<stage_batch_msg>{}, "troupe::stage_batch_msg");
  f(type_tag<stage_tensor_msg>{}, "troupe::stage_tensor_msg");
  f(type_tag<stage_done_msg>{}, "troupe::stage_done_msg");
  f(type_tag<stage_wiring_msg>{}, "troupe::stage_wiring_msg");
  f(type_tag<ring_chunk_msg>{}, "troupe::ring_chunk_msg");
  f(type_tag<peer_list_msg>{}, "troupe::peer_list_msg");
  f(type_tag<dual_msg>{}, "troupe::dual_msg");
  f(type_tag<mirror_msg>{}, "troupe::mirror_msg");
}

// CAF keeps each option type's meta state (check, store, get, parse, name) in
// a function-local static of a header template. GCC, which built Debian's
// libcaf_core, sets its function pointers statically and only the name under
// the guard; Clang sets all of it under the guard. A Clang-built program and
// libcaf_core then share one guard and one object, so if libcaf's
// actor_system_config constructor runs first only the name gets written and
// the first option check jumps to address 0 (it did, in the sanitizer build).
// Touching every meta state libcaf_core has, before main, lets the program's
// own code set them fully first; with GCC this changes nothing.
template <class... Ts>
struct option_meta_states {
  option_meta_states() {
    (caf::detail::option_meta_state_instance<Ts>(), ...);
  }
};

const option_meta_states<bool, std::size_t, std::string, caf::atom_value,
                         caf::timespan, std::vector<caf::atom_value>,
                         std::vector<std::string>, std::vector<std::size_t>>
    meta_states_first;

} // namespace

void register_types(caf::actor_system_config& cfg) {
  for_each_type([&](auto tag, const char* name) {
    cfg.add_message_type<typename decltype(tag)::type>(name);
  });
  // "troupe:not_allowed: node agent ... refuses ...": the category, the
  // code's name and the context, which is one string for every errc.
  cfg.add_error_category(errc_category, [](std::uint8_t code, caf::atom_value,
                                           const caf::message& context) {
    auto text = "troupe:" + to_string(static_cast<errc>(code));
    if (context.match_elements<std::string>())
      text += ": " + context.get_as<std::string>(0);
    else if (!context.empty())
      text += ": " + caf::to_string(context);
    return text;
  });
}

std::vector<std::string> registered_type_names() {
  std::vector<std::string> result;
  for_each_type([&](auto, const char* name) { result.emplace_back(name); });
  return result;
}

} // namespace troupe::messages
