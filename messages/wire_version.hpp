#pragma once

#include <cstdint>

namespace troupe::messages {

/// Version of troupe's wire format. Nodes refuse peers with another version.
/// Bump it whenever a message type, field or encoding changes.
inline constexpr std::uint32_t wire_version = 24;

} // namespace troupe::messages
