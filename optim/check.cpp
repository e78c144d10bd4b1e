#include "optim/check.hpp"

#include <stdexcept>
#include <string_view>

namespace troupe::optim {

namespace {

/// The last two components of a path: enough to find the file in the tree
/// without the build machine's directories.
std::string_view short_path(std::string_view file) {
  auto last = file.rfind('/');
  if (last == std::string_view::npos || last == 0)
    return file;
  auto before = file.rfind('/', last - 1);
  return before == std::string_view::npos ? file : file.substr(before + 1);
}

} // namespace

void check_failed(const char* file, int line, const char* cond,
                  const std::string& what) {
  std::string text{short_path(file)};
  text += ':';
  text += std::to_string(line);
  text += ": check failed: ";
  text += cond;
  if (!what.empty()) {
    text += ": ";
    text += what;
  }
  throw std::logic_error(text);
}

} // namespace troupe::optim
