// A worker's part in a node joining the running job (elastic scale-up): it
// cedes a share of its remaining steps and of the examples it has not drawn
// yet this epoch, which the joining node's workers take.

#include <stdexcept>

#include "actors/detail/log.hpp"
#include "actors/detail/rebalance.hpp"
#include "actors/worker.hpp"

namespace troupe::actors {

using namespace messages;

cede_msg worker_state::cede(std::uint32_t num, std::uint32_t den) {
  cede_msg out;
  out.worker = config.id;
  if (finished_ || !replica_)
    return out;
  // A step under way counts: it ends with counters.steps + 1.
  auto taken = counters.steps + (in_step ? 1 : 0);
  auto remaining = config.max_steps > taken ? config.max_steps - taken : 0;
  auto steps = detail::steps_to_cede(remaining, num, den);
  if (steps == 0)
    return out;
  try {
    for (auto i : replica_->cede_examples(num, den))
      out.examples.push_back(i);
  } catch (const std::exception& e) {
    detail::log().warn("worker {} cannot give examples up: {}", config.id,
                       e.what());
    return out;
  }
  // A joining worker without examples could not take the steps.
  if (out.examples.empty())
    return out;
  out.steps = steps;
  config.max_steps -= steps;
  detail::log().info("worker {} cedes {} steps and {} examples to a joining "
                     "node",
                     config.id, steps, out.examples.size());
  return out;
}

caf::message_handler join_handlers(caf::stateful_actor<worker_state>* self) {
  return {
      [self](cede_atom, std::uint32_t num,
             std::uint32_t den) -> caf::result<cede_msg> {
        if (auto refused = refuse_unless_boss(self, "cede"))
          return *refused;
        auto& st = self->state;
        auto scope = on_message(st.probe_.get(), self, msg_type::adopt,
                                small_message_bytes);
        return st.cede(num, den);
      },
  };
}

} // namespace troupe::actors
