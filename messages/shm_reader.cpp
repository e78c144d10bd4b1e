// The reader's side of the same-host fast path (messages/shm.hpp): mapping
// an offered segment once it checks out, and taking a referenced block.

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <signal.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

#include "messages/shm.hpp"
#include "messages/shm_layout.hpp"

namespace troupe::messages::shm {

using namespace detail;

namespace {

/// A writer's segment this process mapped.
struct mapping {
  unsigned char* base = nullptr;
  std::uint64_t size = 0;
  ~mapping() {
    if (base != nullptr)
      munmap(base, size);
  }
};

struct reader_registry {
  std::mutex mtx;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>,
           std::shared_ptr<mapping>>
      mapped;
  /// Offers that failed (at most max_mapped remembered).
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>> refused;
};

reader_registry& readers() {
  static reader_registry r;
  return r;
}

auto key_of(const segment_id& s) {
  return std::make_tuple(s.pid, s.fd, s.nonce);
}

/// Unmaps the segments whose writer is gone.
void drop_dead(reader_registry& r) {
  for (auto i = r.mapped.begin(); i != r.mapped.end();) {
    if (kill(static_cast<pid_t>(std::get<0>(i->first)), 0) != 0
        && errno == ESRCH)
      i = r.mapped.erase(i);
    else
      ++i;
  }
}

std::string open_segment(const segment_id& s, std::shared_ptr<mapping>& out) {
  if (s.pid == 0 || s.nonce == 0)
    return "an offer without a process or nonce";
  auto path = "/proc/" + std::to_string(s.pid) + "/fd/" + std::to_string(s.fd);
  char link[64] = {};
  auto n = readlink(path.c_str(), link, sizeof(link) - 1);
  std::string target
      = n > 0 ? std::string{link, static_cast<std::size_t>(n)} : std::string{};
  if (target.rfind(std::string{"/memfd:"} + memfd_name, 0) != 0)
    return path + " is not a troupe segment";
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return "cannot open " + path + ": " + std::strerror(errno);
  struct stat st {};
  int seals = fcntl(fd, F_GET_SEALS);
  bool ok = fstat(fd, &st) == 0 && st.st_size > 0
            && static_cast<std::uint64_t>(st.st_size) <= max_segment
            && static_cast<std::uint64_t>(st.st_size) >= min_segment
            && seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW);
  if (!ok) {
    close(fd);
    return path + ": not a sealed segment of an allowed size";
  }
  auto m = std::make_shared<mapping>();
  m->size = static_cast<std::uint64_t>(st.st_size);
  void* p = mmap(nullptr, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    return "cannot map " + path;
  m->base = static_cast<unsigned char*>(p);
  auto& h = *reinterpret_cast<header*>(m->base);
  if (h.magic != magic || h.nonce != s.nonce || h.size != m->size
      || h.pid != s.pid)
    return path + ": not the segment offered";
  h.read.store(1, std::memory_order_release);
  out = std::move(m);
  return {};
}

} // namespace

std::string accept_offer(const segment_id& s) {
  auto& r = readers();
  std::lock_guard<std::mutex> lock{r.mtx};
  auto key = key_of(s);
  if (r.mapped.count(key) > 0)
    return {};
  if (r.refused.count(key) > 0)
    return "an offer refused before";
  if (r.mapped.size() >= max_mapped)
    drop_dead(r);
  std::shared_ptr<mapping> m;
  auto why = r.mapped.size() >= max_mapped
                 ? std::string{"too many segments mapped"}
                 : open_segment(s, m);
  if (!why.empty()) {
    ++count().refused;
    if (r.refused.size() < max_mapped)
      r.refused.insert(key);
    return why;
  }
  r.mapped.emplace(key, std::move(m));
  count().mapped = r.mapped.size();
  return {};
}

namespace {

/// A reader's hold of a block a reference named.
class taken_hold : public hold {
public:
  taken_hold(std::shared_ptr<mapping> m, block* b) : m_(std::move(m)), b_(b) {}
  ~taken_hold() override {
    b_->state.store(block_free, std::memory_order_release);
  }

private:
  std::shared_ptr<mapping> m_;
  block* b_;
};

} // namespace

std::string take(const block_ref& ref, std::shared_ptr<const hold>& out,
                 const void*& where) {
  std::shared_ptr<mapping> m;
  {
    auto& r = readers();
    std::lock_guard<std::mutex> lock{r.mtx};
    auto i = r.mapped.find(key_of(ref.segment));
    if (i != r.mapped.end())
      m = i->second;
  }
  auto refuse = [](std::string why) {
    ++count().refused;
    return why;
  };
  if (!m)
    return refuse("a reference to a segment this process has not mapped");
  if (ref.offset < header_bytes || ref.offset % align != 0
      || ref.offset > m->size || m->size - ref.offset < block_header
      || m->size - ref.offset - block_header < ref.bytes)
    return refuse("a reference outside its segment");
  auto& b = *reinterpret_cast<block*>(m->base + ref.offset);
  if (b.generation != ref.generation || b.bytes != ref.bytes)
    return refuse("a reference to a block that does not hold it");
  auto full = block_full;
  if (!b.state.compare_exchange_strong(full, block_taken,
                                       std::memory_order_acq_rel))
    return refuse("a reference to a block that does not hold it");
  where = m->base + ref.offset + block_header;
  out = std::make_shared<taken_hold>(std::move(m), &b);
  ++count().read;
  count().bytes_read += ref.bytes;
  return {};
}

} // namespace troupe::messages::shm
