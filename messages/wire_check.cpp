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
  if (contains(bytes, size, "@config_value"))
    return "it carries a caf::config_value, which troupe never sends (CAF "
           "0.17.6 ends the process on a malformed one)";
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
