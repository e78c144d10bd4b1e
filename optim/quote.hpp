// Quoting untrusted bytes (a token from a peer, a field from a file) in an
// error message: escaped so that no control character or invalid UTF-8
// reaches a terminal or a log, and truncated so that a 5 MB field does not
// become a 5 MB message.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace troupe::optim {

/// How much of the untrusted text quote() keeps, in output characters.
constexpr std::size_t quote_limit = 64;

/// `bytes` between single quotes: printable ASCII and well-formed UTF-8 as
/// they are, a quote or backslash preceded by a backslash, anything else
/// (control characters, DEL, bytes of malformed UTF-8) as \xNN. When the
/// escaped text would exceed `limit` characters it is cut at a character
/// boundary and followed by "... (N bytes)", N being the size of `bytes`.
std::string quote(std::string_view bytes, std::size_t limit = quote_limit);

/// `bytes` escaped and truncated as by quote() but without the quotes (and
/// with quote and backslash as they are): for text that is a message
/// itself, such as a peer's reason for refusing us.
std::string sanitize(std::string_view bytes, std::size_t limit = 200);

/// "1 worker", "0 shards", "3 nodes": `n` and `noun`, with an "s" unless
/// `n` is 1.
std::string counted(std::uint64_t n, std::string_view noun);

} // namespace troupe::optim
