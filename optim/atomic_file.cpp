#include "optim/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "optim/dataset.hpp"

namespace troupe::optim {

namespace {

std::string reason() {
  return std::strerror(errno);
}

/// Closes a descriptor on every path out.
struct descriptor {
  int fd = -1;
  ~descriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

std::string parent_of(const std::string& path) {
  auto p = std::filesystem::path{path}.parent_path();
  return p.empty() ? std::string{"."} : p.string();
}

} // namespace

void sync_directory(const std::string& dir) {
  descriptor d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd < 0 || ::fsync(d.fd) != 0)
    throw std::runtime_error("cannot flush directory " + dir + ": " + reason());
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  auto tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    auto why = reason();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + what + ": " + why);
  };
  {
    descriptor f{
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0)
      throw std::runtime_error("cannot write " + path + ": " + reason());
    const char* p = bytes.data();
    auto left = bytes.size();
    while (left > 0) {
      auto n = ::write(f.fd, p, left);
      if (n < 0) {
        if (errno == EINTR)
          continue;
        fail("write");
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::fsync(f.fd) != 0)
      fail("fsync");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail("rename");
  sync_directory(parent_of(path));
}

std::string read_whole_file(const std::string& path, std::uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw data_error(path + ": is a directory, not a file");
  descriptor f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    throw data_error(path + ": cannot open: " + reason());
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw data_error(path + ": cannot read: " + reason());
  auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes)
    throw data_error(path + ": " + std::to_string(size)
                     + " bytes, more than the " + std::to_string(max_bytes)
                     + " accepted");
  std::string out(size, '\0');
  std::size_t at = 0;
  while (at < out.size()) {
    auto n = ::read(f.fd, out.data() + at, out.size() - at);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw data_error(path + ": read error: " + reason());
    }
    if (n == 0)
      break; // shrank while being read
    at += static_cast<std::size_t>(n);
  }
  out.resize(at);
  return out;
}

} // namespace troupe::optim
