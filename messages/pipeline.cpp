#include "messages/pipeline.hpp"

namespace troupe::messages {

namespace {

std::string head(const char* name, worker_id replica, std::uint64_t gen,
                 std::uint64_t step) {
  return std::string{name} + "(replica " + std::to_string(replica) + ", gen "
         + std::to_string(gen) + ", step " + std::to_string(step);
}

} // namespace

std::string to_string(const stage_batch_msg& x) {
  return head("stage_batch_msg", x.replica, x.generation, x.step) + ", micro "
         + std::to_string(x.micro) + ", " + std::to_string(x.samples)
         + " samples, " + std::to_string(x.x.size()) + " values)";
}

std::string to_string(const stage_tensor_msg& x) {
  return head("stage_tensor_msg", x.replica, x.generation, x.step) + ", micro "
         + std::to_string(x.micro) + (x.backward ? ", backward, " : ", ")
         + std::to_string(x.values.size()) + " values)";
}

std::string to_string(const stage_done_msg& x) {
  return head("stage_done_msg", x.replica, x.generation, x.step) + ", stage "
         + std::to_string(x.stage) + ", " + to_string(x.loss) + ")";
}

std::string to_string(const stage_wiring_msg& x) {
  return "stage_wiring_msg(gen " + std::to_string(x.generation) + ", "
         + std::to_string(x.stages.size()) + " stages)";
}

} // namespace troupe::messages
