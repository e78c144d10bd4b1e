#include "optim/quote.hpp"

#include <cstdio>
#include <utility>

namespace troupe::optim {

namespace {

/// Length of the well-formed UTF-8 sequence of 2 to 4 bytes starting at
/// `i`, or 0 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (at(k) & 0xC0) == 0x80;
  };
  unsigned char c = at(0);
  if (c >= 0xC2 && c <= 0xDF)
    return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2))
      return 0;
    if ((c == 0xE0 && at(1) < 0xA0) || (c == 0xED && at(1) > 0x9F))
      return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3))
      return 0;
    if ((c == 0xF0 && at(1) < 0x90) || (c == 0xF4 && at(1) > 0x8F))
      return 0;
    return 4;
  }
  return 0;
}

/// The escaped text, cut before it exceeds `limit` characters, and the
/// number of bytes of `bytes` it covers.
std::pair<std::string, std::size_t> escape(std::string_view bytes,
                                           std::size_t limit, bool quoted) {
  std::string out;
  std::size_t shown = 0; // output characters so far
  std::size_t i = 0;
  while (i < bytes.size()) {
    auto c = static_cast<unsigned char>(bytes[i]);
    std::string piece;
    std::size_t used = 1;
    if (quoted && (c == '\'' || c == '\\')) {
      piece = {'\\', static_cast<char>(c)};
    } else if (c >= 0x20 && c < 0x7F) {
      piece = std::string(1, static_cast<char>(c));
    } else if (auto n = c >= 0x80 ? utf8_length(bytes, i) : 0; n > 0) {
      piece = std::string{bytes.substr(i, n)};
      used = n;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      piece = buf;
    }
    auto width = used > 1 ? 1 : piece.size();
    if (shown + width > limit)
      break;
    out += piece;
    shown += width;
    i += used;
  }
  return {out, i};
}

std::string suffix(std::string_view bytes, std::size_t shown) {
  return shown < bytes.size()
             ? "... (" + std::to_string(bytes.size()) + " bytes)"
             : std::string{};
}

} // namespace

std::string quote(std::string_view bytes, std::size_t limit) {
  auto [text, shown] = escape(bytes, limit, true);
  return "'" + text + "'" + suffix(bytes, shown);
}

std::string sanitize(std::string_view bytes, std::size_t limit) {
  auto [text, shown] = escape(bytes, limit, false);
  return text + suffix(bytes, shown);
}

std::string counted(std::uint64_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string{noun} + (n == 1 ? "" : "s");
}

} // namespace troupe::optim
