# cmake -DIN=FILE -DOUT=FILE.cpp -DNAME=function [-DNAMESPACE=ns] -P
# embed.cmake: writes a C++ source defining `const std::string& ns::NAME()`
# (ns: troupe::net by default) that returns the bytes of IN (assets compiled
# into the binary; no files at run time).
if(NOT NAMESPACE)
  set(NAMESPACE troupe::net)
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/embed.cmake; do not edit.
#include <string>

namespace ${NAMESPACE} {

namespace {
const unsigned char bytes[] = {
${bytes}0x00};
} // namespace

const std::string& ${NAME}() {
  static const std::string s(reinterpret_cast<const char*>(bytes),
                             sizeof(bytes) - 1);
  return s;
}

} // namespace ${NAMESPACE}
")
# Only touch OUT when it changes, so unrelated builds do not recompile it.
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
