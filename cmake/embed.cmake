# cmake -DIN=FILE -DOUT=FILE.cpp -DNAME=function -P embed.cmake: writes a C++
# source defining `const std::string& troupe::net::NAME()` that returns the
# bytes of IN (assets compiled into the binary; no files at run time).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/embed.cmake; do not edit.
#include <string>

namespace troupe::net {

namespace {
const unsigned char bytes[] = {
${bytes}0x00};
} // namespace

const std::string& ${NAME}() {
  static const std::string s(reinterpret_cast<const char*>(bytes),
                             sizeof(bytes) - 1);
  return s;
}

} // namespace troupe::net
")
# Only touch OUT when it changes, so unrelated builds do not recompile it.
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
