// quote(): untrusted bytes in error messages, escaped and truncated.

#include <string>

#include <catch2/catch.hpp>

#include "optim/quote.hpp"

using troupe::optim::quote;

TEST_CASE("quote keeps printable text and UTF-8, escapes the rest") {
  CHECK(quote("abc 12") == "'abc 12'");
  CHECK(quote("") == "''");
  CHECK(quote("it's a\\b") == "'it\\'s a\\\\b'");
  CHECK(quote("a\nb\tc\x1B[0m\x7F") == "'a\\x0Ab\\x09c\\x1B[0m\\x7F'");
  CHECK(quote(std::string{"n\0l", 3}) == "'n\\x00l'");
  CHECK(quote("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80")
        == "'caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80'");
  // Malformed UTF-8: a lone continuation byte, a cut sequence, an overlong
  // form, a surrogate, a byte that never occurs.
  CHECK(quote("\x80") == "'\\x80'");
  CHECK(quote("\xC3") == "'\\xC3'");
  CHECK(quote("\xE2\x82x") == "'\\xE2\\x82x'");
  CHECK(quote("\xC0\xAF") == "'\\xC0\\xAF'");
  CHECK(quote("\xED\xA0\x80") == "'\\xED\\xA0\\x80'");
  CHECK(quote("\xFF") == "'\\xFF'");
}

TEST_CASE("quote truncates long text and says how long it was") {
  std::string big(5 * 1000 * 1000, 't');
  auto q = quote(big);
  CHECK(q == "'" + std::string(64, 't') + "'... (5000000 bytes)");
  CHECK(quote(std::string(64, 'x')) == "'" + std::string(64, 'x') + "'");
  // Cut at a character boundary: never half an escape or a UTF-8 sequence.
  CHECK(quote("abcdef\x01", 8) == "'abcdef'... (7 bytes)");
  CHECK(quote("abcdefg\xC3\xA9", 8) == "'abcdefg\xC3\xA9'");
  CHECK(quote("abcdefgh\xC3\xA9", 8) == "'abcdefgh'... (10 bytes)");
  CHECK(quote(std::string(100, '\x02'), 10) == "'\\x02\\x02'... (100 bytes)");
}

TEST_CASE("sanitize escapes and truncates without quoting") {
  using troupe::optim::sanitize;
  CHECK(sanitize("the coordinator's reason") == "the coordinator's reason");
  CHECK(sanitize("a\\b\r\n") == "a\\b\\x0D\\x0A");
  CHECK(sanitize(std::string(300, 'r'))
        == std::string(200, 'r') + "... (300 bytes)");
}
