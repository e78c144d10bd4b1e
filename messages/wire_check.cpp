#include "messages/wire_check.hpp"

#include <cstring>

namespace troupe::messages {

namespace {

/// glibc's memmem (two-way, vectorized): the guard runs this over every
/// frame it reads whole, pushes and parameter replies included.
bool contains(const unsigned char* bytes, std::size_t size, const char* what) {
  return ::memmem(bytes, size, what, std::strlen(what)) != nullptr;
}

} // namespace

std::string unsafe_payload(const unsigned char* bytes, std::size_t size,
                           bool complete) {
  // Every element's type name follows a '+' in its message's type list
  // ("@<>+name+name", at any depth), so one memchr pass over the '+' finds
  // them all: one scan of the frame instead of one per name (the guard runs
  // this over every push and parameter reply).
  //  - a caf::config_value: CAF 0.17.6 ends the process on a malformed one;
  //  - a bare float, double or long double: CAF 0.17.6's encoder never
  //    returns on an infinite one, and a peer's infinity in an error's
  //    context would hang the thread that passes the error on (a worker's
  //    exit reason goes to its coordinator). troupe's messages carry doubles
  //    as bits.
  static constexpr const char* forbidden[]
      = {"@config_value", "float", "double", "@ldouble"};
  const unsigned char* end = bytes + size;
  for (auto p = bytes; p < end; ++p) {
    p = static_cast<const unsigned char*>(std::memchr(p, '+', end - p));
    if (p == nullptr)
      break;
    auto rest = static_cast<std::size_t>(end - p - 1);
    for (auto name : forbidden) {
      auto n = std::strlen(name);
      if (rest < n || std::memcmp(p + 1, name, n) != 0)
        continue;
      if (name == forbidden[0])
        return "it carries a caf::config_value, which troupe never sends "
               "(CAF 0.17.6 ends the process on a malformed one)";
      return std::string{"it carries a bare floating-point element ("} + name
             + "), which troupe never sends (CAF 0.17.6 cannot send an "
               "infinite one on)";
    }
  }
  if (complete)
    return {};
  // Every type CAF 0.17.6 knows that holds a message of its own.
  for (auto name : {"@message", "@error", "@down", "@exit", "@downstream_msg",
                    "@upstream_msg", "@open_stream_msg"})
    if (contains(bytes, size, name))
      return std::string{"it is too large to be checked whole and carries a "
                         "nested message ("}
             + (name + 1) + ")";
  return {};
}

} // namespace troupe::messages
