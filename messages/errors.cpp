#include "messages/errors.hpp"

namespace troupe::messages {

std::string to_string(errc x) {
  switch (x) {
  case errc::not_allowed:
    return "not_allowed";
  case errc::unknown_role:
    return "unknown_role";
  case errc::bad_arguments:
    return "bad_arguments";
  }
  return "troupe error " + std::to_string(static_cast<int>(x));
}

} // namespace troupe::messages
