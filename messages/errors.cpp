#include "messages/errors.hpp"

namespace troupe::messages {

std::string to_string(errc x) {
  switch (x) {
  case errc::not_allowed:
    return "not_allowed";
  }
  return "troupe error " + std::to_string(static_cast<int>(x));
}

} // namespace troupe::messages
