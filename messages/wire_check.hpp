// What CAF 0.17.6 must not be asked to decode.
//
// CAF decodes a message by the type names at its front ("@<>+name+name...")
// and throws from inside its decoder on a caf::config_value (a variant) whose
// type index is out of range. The throw happens on a scheduler or multiplexer
// thread that catches nothing, so one such value from any peer, even nested in
// an error's context or a down message's reason, ends the process. troupe
// never sends a config_value; the guard (net/guard.hpp) refuses every frame
// whose bytes name one, and the hello fuzz target checks that what passes
// this check decodes without a throw.
//
// CAF 0.17.6's float encoder loops forever on an infinite float or double
// (pack754), and a troupe actor passes on errors it received (a worker's
// exit reason, made of a peer's error, goes to its coordinator). troupe
// sends doubles only as bit patterns inside its own types, so the guard
// refuses a frame naming a bare float, double or long double element, at
// any depth, an error's context included.

#pragma once

#include <cstddef>
#include <string>

namespace troupe::messages {

/// Why a BASP payload must not reach CAF's decoder ("" if it may). With
/// `complete` false the bytes are only the first part of the payload (the
/// guard streams large frames): then a nested message (an element of type
/// caf::message, caf::error, a down or exit message or a stream message),
/// whose own type names could lie in the unseen part, is refused too.
std::string unsafe_payload(const unsigned char* bytes, std::size_t size,
                           bool complete);

} // namespace troupe::messages
