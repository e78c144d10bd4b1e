// A directory of checkpoints (issue [11]). Each checkpoint is a
// subdirectory named after the job's step, "step-000000001234", holding one
// file per role (each written atomically, optim/atomic_file.hpp) and a
// manifest, MANIFEST.json, written last: the step, the job's description
// and every file's size and CRC-32. A checkpoint without a manifest, or
// whose files do not match it, does not exist: a writer killed half way
// leaves the previous checkpoint the latest.

#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace troupe::optim {

/// The name of the manifest in a checkpoint's directory.
inline constexpr const char* checkpoint_manifest = "MANIFEST.json";

/// The largest role file read back (a cap on what a damaged or hostile
/// directory can make a reader allocate).
inline constexpr std::uint64_t max_checkpoint_file = std::uint64_t{4} << 30;

/// What to write: the role files (name -> bytes; names are plain file
/// names) and the job's description and progress as JSON text.
struct checkpoint_content {
  std::uint64_t step = 0;
  std::string job;  ///< what a resume must match (JSON object text)
  std::string info; ///< anything else (JSON object text), e.g. progress
  std::map<std::string, std::string> files;
};

/// A complete checkpoint read back.
struct checkpoint {
  std::string path; ///< its directory
  std::uint64_t step = 0;
  std::string job;
  std::string info;
  std::map<std::string, std::string> files;
};

/// Writes `c` as checkpoint c.step under `dir` (created if missing), then
/// removes every checkpoint but the `keep` latest complete ones (keep >= 1)
/// and any incomplete one older than the new one. Returns the checkpoint's
/// directory. Throws std::invalid_argument on a file name that is not a
/// plain name (a separator, "..", the manifest's name) and
/// std::runtime_error naming the file that could not be written.
std::string write_checkpoint(const std::string& dir,
                             const checkpoint_content& c, std::size_t keep);

/// The latest complete checkpoint under `dir`, read and checked (manifest,
/// sizes, CRC-32s); damaged ones are skipped, each with a line naming it and
/// its problem added to `skipped`. nullopt if there is none. Throws
/// data_error if `dir` does not exist or is not a directory.
std::optional<checkpoint> latest_checkpoint(const std::string& dir,
                                            std::vector<std::string>* skipped
                                            = nullptr);

/// The complete checkpoints' steps under `dir`, oldest first (manifests
/// checked, files not read).
std::vector<std::uint64_t> checkpoint_steps(const std::string& dir);

} // namespace troupe::optim
