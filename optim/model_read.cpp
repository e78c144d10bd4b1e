// read_model_description and names_model_file of optim/model_spec.hpp: the
// --model values that name a file, `FILE.json` (a description) and
// `torchscript:FILE.pt` (a TorchScript module, optim/torchscript_layer.hpp).

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "optim/dataset.hpp"
#include "optim/model_spec.hpp"

namespace troupe::optim {

namespace {

using json = nlohmann::json;

constexpr char torchscript_prefix[] = "torchscript:";

/// What a description read from `path` is named without a "name".
std::string name_of(const std::string& path) {
  auto stem = std::filesystem::path{path}.stem().string();
  return stem.empty() || stem.size() > 64
                 || stem.find_first_of("\"\\/{}\n\r\t") != std::string::npos
             ? std::string{"custom"}
             : stem;
}

/// Makes the relative "file"s of the torchscript layers in `layers` (and
/// in residual blocks) absolute, relative to `dir`.
void resolve_files(json& layers, const std::filesystem::path& dir) {
  if (!layers.is_array())
    return;
  for (auto& l : layers) {
    if (!l.is_object())
      continue;
    if (l.contains("layers"))
      resolve_files(l["layers"], dir);
    auto f = l.find("file");
    if (l.value("type", json{}) == "torchscript" && f != l.end()
        && f->is_string()
        && std::filesystem::path{f->get<std::string>()}.is_relative())
      *f = (dir / f->get<std::string>()).lexically_normal().string();
  }
}

/// The checked description of its text, with the name and absolute paths
/// (throws std::invalid_argument as model_description does).
std::string checked_text(const std::string& text, const std::string& path) {
  json d;
  try {
    d = json::parse(text);
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string{"not valid JSON: "} + e.what());
  }
  if (!d.is_object())
    throw std::invalid_argument("a model description must be a JSON object "
                                "with \"layers\"");
  // The nodes of a job get the checked description, not the file: a
  // module's path relative to the description is made absolute.
  std::error_code ec;
  if (d.contains("layers"))
    resolve_files(d["layers"],
                  std::filesystem::absolute(path, ec).parent_path());
  d = json::parse(model_description(d.dump()));
  if (!d.contains("name"))
    d["name"] = name_of(path);
  return d.dump();
}

/// The description of `--model=torchscript:FILE`: the module as the only
/// layer, named after the file, its path absolute (every node of a job
/// reads the same path).
std::string torchscript_description(const std::string& model) {
  const auto file = model.substr(sizeof torchscript_prefix - 1);
  std::error_code ec;
  if (file.empty() || !std::filesystem::is_regular_file(file, ec))
    throw data_error(model + ": no such file");
  const auto path = std::filesystem::absolute(file, ec).lexically_normal();
  json layer = {{"type", "torchscript"}, {"file", path.string()}};
  json d = {{"name", name_of(file)}, {"layers", json::array({layer})}};
  try {
    return model_description(d.dump());
  } catch (const std::invalid_argument& e) {
    throw data_error(model + ": " + e.what());
  }
}

} // namespace

bool names_model_file(const std::string& model) {
  return !is_model_description(model)
         && ((model.size() > 5
              && model.compare(model.size() - 5, 5, ".json") == 0)
             || model.rfind(torchscript_prefix, 0) == 0);
}

std::string read_model_description(const std::string& path) {
  if (path.rfind(torchscript_prefix, 0) == 0)
    return torchscript_description(path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw data_error(path + ": no such model description file");
  auto size = std::filesystem::file_size(path, ec);
  if (ec || size > max_model_description)
    throw data_error(path + ": a model description has at most "
                     + std::to_string(max_model_description) + " bytes");
  std::ifstream in{path, std::ios::binary};
  std::ostringstream text;
  text << in.rdbuf();
  if (!in)
    throw data_error(path + ": cannot be read");
  try {
    return checked_text(text.str(), path);
  } catch (const std::invalid_argument& e) {
    throw data_error(path + ": " + e.what());
  }
}

} // namespace troupe::optim
