// Files written so that a reader (or a restart after a crash) sees either
// the old content or the whole new one, never a part: the bytes go to a
// temporary name in the same directory, are flushed to the disk (fsync),
// renamed over the target, and the directory entry is flushed too.

#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace troupe::optim {

/// Writes `bytes` to `path` atomically and durably (see above); throws
/// std::runtime_error naming the file and the system's reason. No temporary
/// file is left behind on failure.
void write_file_atomic(const std::string& path, std::string_view bytes);

/// Flushes a directory's entries (created, renamed or removed files) to the
/// disk; throws std::runtime_error naming it.
void sync_directory(const std::string& dir);

/// A whole file's bytes; throws data_error naming it (missing, a
/// directory, unreadable) or if it is larger than `max_bytes`.
std::string read_whole_file(const std::string& path,
                            std::uint64_t max_bytes = ~std::uint64_t{0});

} // namespace troupe::optim
