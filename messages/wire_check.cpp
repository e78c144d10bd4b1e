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
  // A bare floating-point element (the type names of a message's elements
  // are joined by '+'): CAF 0.17.6's encoder never returns on an infinite
  // one and turns NaN into 1.0, so a peer's infinity in an error's context
  // would hang the thread that passes the error on (a worker's exit reason
  // goes to its coordinator). troupe's messages carry doubles as bits.
  for (auto name : {"+float", "+double", "+@ldouble"})
    if (contains(bytes, size, name))
      return std::string{"it carries a bare floating-point element ("}
             + (name + 1)
             + "), which troupe never sends (CAF 0.17.6 cannot send an "
               "infinite one on)";
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
