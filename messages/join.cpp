#include "messages/join.hpp"

namespace troupe::messages {

std::string to_string(const cede_msg& x) {
  return "cede_msg(" + std::to_string(x.worker) + ", " + std::to_string(x.steps)
         + " steps, " + std::to_string(x.examples.size()) + " examples)";
}

} // namespace troupe::messages
