// json_get FILE POINTER: prints the value at a JSON pointer (RFC 6901) of
// the last line of FILE that is a JSON object (the troupe --json
// convention). Strings print without quotes. Exit 1 if absent. For the
// shell tests, which cannot count on python or jq.
//
// One extension: a segment `[key=value]` selects the first element of an
// array whose member `key` is the string `value`, e.g.
// /actors/[name=worker 1]/state.

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace {

const nlohmann::json& walk(const nlohmann::json& doc, const std::string& ptr) {
  const nlohmann::json* at = &doc;
  std::size_t pos = 0;
  while (pos < ptr.size()) {
    if (ptr[pos] != '/')
      throw std::invalid_argument("a pointer starts with /");
    auto next = pos + 1;
    // A selector may contain '/' in its value: it ends at ']'.
    std::size_t end;
    if (next < ptr.size() && ptr[next] == '[') {
      end = ptr.find(']', next);
      if (end == std::string::npos)
        throw std::invalid_argument("unclosed [ in " + ptr);
      ++end;
    } else {
      end = ptr.find('/', next);
      if (end == std::string::npos)
        end = ptr.size();
    }
    auto seg = ptr.substr(next, end - next);
    if (!seg.empty() && seg.front() == '[') {
      auto eq = seg.find('=');
      if (eq == std::string::npos || !at->is_array())
        throw std::out_of_range("no array to select " + seg + " from");
      auto k = seg.substr(1, eq - 1);
      auto v = seg.substr(eq + 1, seg.size() - eq - 2);
      const nlohmann::json* found = nullptr;
      for (auto& x : *at)
        if (x.is_object() && x.contains(k) && x[k].is_string() && x[k] == v) {
          found = &x;
          break;
        }
      if (!found)
        throw std::out_of_range("no element with " + k + " = " + v);
      at = found;
    } else {
      at = &at->at(nlohmann::json::json_pointer{"/" + seg});
    }
    pos = end;
  }
  return *at;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: json_get FILE POINTER\n";
    return 2;
  }
  std::ifstream in{argv[1]};
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line.front() == '{')
      last = line;
  try {
    auto doc = nlohmann::json::parse(last);
    auto& value = walk(doc, argv[2]);
    if (value.is_string())
      std::cout << value.get<std::string>() << '\n';
    else
      std::cout << value.dump() << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "json_get: " << argv[1] << " " << argv[2] << ": " << e.what()
              << '\n';
    return 1;
  }
}
