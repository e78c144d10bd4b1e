#include "messages/messages.hpp"

#include <caf/detail/stringification_inspector.hpp>

namespace troupe::messages {

namespace {

/// Prints `x` through its inspect() overload; calling deep_to_string here
/// would recurse into the to_string being defined.
template <class T>
std::string stringify(const T& x) {
  std::string result;
  caf::detail::stringification_inspector f{result};
  inspect(f, const_cast<T&>(x));
  return result;
}

} // namespace

bool operator==(const push_msg& x, const push_msg& y) noexcept {
  return x.worker == y.worker && x.seq == y.seq && x.version == y.version
         && x.offset == y.offset && x.values == y.values;
}

std::string to_string(const push_msg& x) {
  return stringify(x);
}

bool operator==(const fetch_msg& x, const fetch_msg& y) noexcept {
  return x.worker == y.worker && x.offset == y.offset && x.size == y.size;
}

std::string to_string(const fetch_msg& x) {
  return stringify(x);
}

bool operator==(const params_msg& x, const params_msg& y) noexcept {
  return x.version == y.version && x.offset == y.offset && x.values == y.values;
}

std::string to_string(const params_msg& x) {
  return stringify(x);
}

bool operator==(const hello_msg& x, const hello_msg& y) noexcept {
  return x.version == y.version && x.node == y.node;
}

std::string to_string(const hello_msg& x) {
  return stringify(x);
}

} // namespace troupe::messages
