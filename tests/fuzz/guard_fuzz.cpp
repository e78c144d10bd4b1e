// The port guard's frame check on a 32-byte BASP header (net/guard.hpp,
// basp_guard::check_header). Contract, for any header, either flag and a
// limit taken from the input: an accepted header names a known operation,
// a client handshake when it opens the connection, and a payload within the
// limit; a refused one gets a reason.

#include <cstring>
#include <string>

#include <caf/io/basp/message_type.hpp>

#include "net/guard.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using troupe::net::basp_guard;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  constexpr auto n = basp_guard::header_size;
  if (size < n + 5)
    return 0;
  unsigned char header[n];
  std::memcpy(header, data, n);
  bool first = data[n] & 1;
  std::uint32_t max_payload = 0;
  std::memcpy(&max_payload, data + n + 1, 4);
  auto why = basp_guard::check_header(header, first, max_payload);
  std::uint32_t len = (std::uint32_t{header[4]} << 24)
                      | (std::uint32_t{header[5]} << 16)
                      | (std::uint32_t{header[6]} << 8) | header[7];
  if (why.empty()) {
    FUZZ_CHECK(len <= max_payload, "a payload above the limit accepted");
    using op = caf::io::basp::message_type;
    FUZZ_CHECK(header[0] <= static_cast<std::uint8_t>(op::heartbeat),
               "an unknown operation accepted");
    FUZZ_CHECK(
        !first || header[0] == static_cast<std::uint8_t>(op::client_handshake),
        "a first frame other than a handshake accepted");
  }
  // The check reads the header only: the same bytes, the same verdict.
  FUZZ_CHECK(basp_guard::check_header(header, first, max_payload) == why,
             "the verdict depends on more than the header");
  return 0;
}
