#include "messages/lbfgs.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace troupe::messages {

std::string to_string(const lbfgs_vec_msg& x) {
  return "lbfgs_vec_msg(" + std::to_string(x.op) + ", " + std::to_string(x.a)
         + ", " + std::to_string(x.b) + ", " + to_string(x.alpha) + ")";
}

std::string to_string(const lbfgs_point_msg& x) {
  return "lbfgs_point_msg(" + std::to_string(x.pass) + ", "
         + std::to_string(x.values.size() / sizeof(double)) + " values)";
}

std::string to_string(const lbfgs_grad_msg& x) {
  return "lbfgs_grad_msg(" + std::to_string(x.pass) + ", "
         + std::to_string(x.portion) + ", " + std::to_string(x.samples) + ", "
         + std::to_string(x.values.size() / sizeof(double)) + " values)";
}

std::string to_string(const lbfgs_done_msg& x) {
  return "lbfgs_done_msg(" + std::to_string(x.worker) + ", "
         + std::to_string(x.pass) + ", " + std::to_string(x.portion) + ", "
         + to_string(x.loss) + ", " + std::to_string(x.samples) + ")";
}

std::string pack_doubles(const double* x, std::size_t n) {
  std::string out(n * sizeof(double), '\0');
  if (n > 0)
    std::memcpy(out.data(), x, out.size());
  return out;
}

std::vector<double> unpack_doubles(const std::string& s) {
  if (s.size() % sizeof(double) != 0)
    throw std::invalid_argument("a vector of doubles of "
                                + std::to_string(s.size()) + " bytes");
  std::vector<double> out(s.size() / sizeof(double));
  if (!out.empty())
    std::memcpy(out.data(), s.data(), s.size());
  for (auto v : out)
    if (!std::isfinite(v))
      throw std::invalid_argument("a non-finite value");
  return out;
}

} // namespace troupe::messages
