#include "optim/checkpoint_dir.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "optim/atomic_file.hpp"
#include "optim/dataset.hpp"
#include "optim/quote.hpp"

namespace troupe::optim {

namespace fs = std::filesystem;

namespace {

constexpr const char* prefix = "step-";
constexpr int format_version = 1;

std::string dir_name(std::uint64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%012llu",
                static_cast<unsigned long long>(step));
  return buf;
}

/// The step a subdirectory's name stands for; nullopt for other names.
std::optional<std::uint64_t> step_of(const std::string& name) {
  if (name.rfind(prefix, 0) != 0 || name.size() != 17)
    return std::nullopt;
  std::uint64_t step = 0;
  for (auto c : name.substr(5)) {
    if (c < '0' || c > '9')
      return std::nullopt;
    step = step * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return step;
}

std::uint32_t crc_of(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  auto left = bytes.size();
  while (left > 0) {
    auto n = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<std::uint32_t>(crc);
}

bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".."
         && name.find('/') == std::string::npos
         && name.find('\0') == std::string::npos && name != checkpoint_manifest
         && name.find(".tmp.") == std::string::npos;
}

/// The subdirectories that look like checkpoints, by step.
std::map<std::uint64_t, fs::path> candidates(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw data_error(
        dir + ": "
        + (fs::exists(dir, ec) ? "not a directory" : "no such directory"));
  std::map<std::uint64_t, fs::path> out;
  for (const auto& e : fs::directory_iterator{dir, ec}) {
    if (!e.is_directory(ec))
      continue;
    if (auto s = step_of(e.path().filename().string()))
      out.emplace(*s, e.path());
  }
  if (ec)
    throw data_error(dir + ": cannot list: " + ec.message());
  return out;
}

/// The parsed manifest of a checkpoint directory; throws data_error.
nlohmann::json read_manifest(const fs::path& path, std::uint64_t step) {
  auto file = (path / checkpoint_manifest).string();
  auto text = read_whole_file(file, std::uint64_t{64} << 20);
  auto m = nlohmann::json::parse(text, nullptr, false);
  if (m.is_discarded() || !m.is_object())
    throw data_error(file + ": not a JSON object");
  auto need = [&](const char* key, bool ok) {
    if (!ok)
      throw data_error(file + ": " + quote(key) + " is missing or malformed");
  };
  need("format", m.contains("format") && m["format"] == format_version);
  need("step", m.contains("step") && m["step"].is_number_unsigned()
                   && m["step"].get<std::uint64_t>() == step);
  need("job", m.contains("job") && m["job"].is_string());
  need("info", m.contains("info") && m["info"].is_string());
  need("files", m.contains("files") && m["files"].is_object());
  for (const auto& [name, f] : m["files"].items())
    need("files", plain_name(name) && f.is_object() && f.contains("bytes")
                      && f["bytes"].is_number_unsigned() && f.contains("crc32")
                      && f["crc32"].is_number_unsigned());
  return m;
}

void remove_all_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

} // namespace

std::string write_checkpoint(const std::string& dir,
                             const checkpoint_content& c, std::size_t keep) {
  if (keep == 0)
    throw std::invalid_argument("write_checkpoint: keep must be at least 1");
  for (const auto& [name, bytes] : c.files)
    if (!plain_name(name))
      throw std::invalid_argument("write_checkpoint: " + quote(name)
                                  + " is not a plain file name");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create checkpoint directory " + dir + ": "
                             + ec.message());
  auto path = fs::path{dir} / dir_name(c.step);
  // A leftover of the same step (an earlier writer killed half way, or a
  // resumed run reaching the step again) is replaced.
  remove_all_quietly(path);
  fs::create_directory(path, ec);
  if (ec)
    throw std::runtime_error("cannot create " + path.string() + ": "
                             + ec.message());
  nlohmann::json files = nlohmann::json::object();
  for (const auto& [name, bytes] : c.files) {
    write_file_atomic((path / name).string(), bytes);
    files[name] = {{"bytes", bytes.size()}, {"crc32", crc_of(bytes)}};
  }
  nlohmann::json manifest{{"format", format_version},
                          {"step", c.step},
                          {"job", c.job},
                          {"info", c.info},
                          {"files", files}};
  write_file_atomic((path / checkpoint_manifest).string(),
                    manifest.dump(1) + "\n");
  sync_directory(dir);
  // Rotation: the `keep` latest complete checkpoints stay; incomplete ones
  // older than this one are a killed writer's and go too.
  auto all = candidates(dir);
  std::size_t complete = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->first > c.step)
      continue; // a later one (not ours to judge)
    bool ok = true;
    try {
      read_manifest(it->second, it->first);
    } catch (const data_error&) {
      ok = false;
    }
    if (ok && complete < keep)
      ++complete;
    else
      remove_all_quietly(it->second);
  }
  sync_directory(dir);
  return path.string();
}

std::vector<std::uint64_t> checkpoint_steps(const std::string& dir) {
  std::vector<std::uint64_t> out;
  for (const auto& [step, path] : candidates(dir)) {
    try {
      read_manifest(path, step);
      out.push_back(step);
    } catch (const data_error&) {
    }
  }
  return out;
}

std::optional<checkpoint> latest_checkpoint(const std::string& dir,
                                            std::vector<std::string>* skipped) {
  auto all = candidates(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      auto m = read_manifest(it->second, it->first);
      checkpoint c;
      c.path = it->second.string();
      c.step = it->first;
      c.job = m["job"].get<std::string>();
      c.info = m["info"].get<std::string>();
      for (const auto& [name, f] : m["files"].items()) {
        auto file = (it->second / name).string();
        auto bytes = read_whole_file(file, max_checkpoint_file);
        if (bytes.size() != f["bytes"].get<std::uint64_t>())
          throw data_error(file + ": " + std::to_string(bytes.size())
                           + " bytes, the manifest says "
                           + std::to_string(f["bytes"].get<std::uint64_t>()));
        if (crc_of(bytes) != f["crc32"].get<std::uint32_t>())
          throw data_error(file + ": CRC-32 does not match the manifest's");
        c.files.emplace(name, std::move(bytes));
      }
      return c;
    } catch (const data_error& e) {
      if (skipped)
        skipped->push_back(e.what());
    }
  }
  return std::nullopt;
}

} // namespace troupe::optim
