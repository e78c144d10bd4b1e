// json_get FILE POINTER: prints the value at a JSON pointer (RFC 6901) of
// the last line of FILE that is a JSON object (the troupe --json
// convention). Strings print without quotes. Exit 1 if absent. For the
// shell tests, which cannot count on python or jq.

#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

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
    auto& value = doc.at(nlohmann::json::json_pointer{argv[2]});
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
