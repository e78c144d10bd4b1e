#include "messages/shm.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

#include <caf/node_id.hpp>

#include "messages/shm_layout.hpp"

namespace troupe::messages::shm {

using namespace detail;

namespace {
std::atomic<bool> on{false};

std::uint64_t random_nonce() {
  std::random_device rd;
  std::uint64_t x = 0;
  while (x == 0)
    x = (std::uint64_t{rd()} << 32) ^ rd();
  return x;
}
} // namespace

namespace {

/// The writer's record of a block in flight: leased to a tensor that views
/// it (held) and sent by reference (shipped). Reusable once no tensor holds
/// it and the reader freed it (or it was never sent by reference).
struct lease_state {
  std::atomic<bool> held{false};
  std::atomic<bool> shipped{true};
};

} // namespace

class channel {
public:
  int fd = -1;
  unsigned char* base = nullptr;
  std::uint64_t size = 0;
  std::uint64_t nonce = 0;
  std::mutex mtx;
  /// Blocks in flight, oldest first (the writer's own record: nothing the
  /// reader writes but a block's state is trusted).
  struct record {
    std::uint64_t offset, bytes;
    std::shared_ptr<lease_state> lease;
  };
  std::deque<record> in_flight;
  std::uint64_t head = header_bytes;
  std::uint32_t generation = 0;

  ~channel() {
    if (base != nullptr)
      munmap(base, size);
    if (fd >= 0)
      close(fd);
  }

  header& head_block() {
    return *reinterpret_cast<header*>(base);
  }
  block& at(std::uint64_t offset) {
    return *reinterpret_cast<block*>(base + offset);
  }

  bool reusable(const record& r) {
    auto& l = *r.lease;
    if (l.held.load(std::memory_order_acquire))
      return false;
    return !l.shipped.load(std::memory_order_acquire)
           || at(r.offset).state.load(std::memory_order_acquire) == block_free;
  }

  /// Fills a free block with `bytes` bytes from `data`; its offset, or 0.
  std::uint64_t fill(const void* data, std::uint64_t bytes,
                     std::shared_ptr<lease_state> l) {
    auto need = round_up(block_header + bytes);
    std::uint64_t at_ = need <= size / 2 ? place(need) : 0;
    if (at_ == 0)
      return 0;
    auto& b = at(at_);
    b.generation = ++generation;
    b.bytes = bytes;
    if (bytes > 0)
      std::memcpy(base + at_ + block_header, data, bytes);
    b.state.store(block_full, std::memory_order_release);
    in_flight.push_back({at_, need, std::move(l)});
    head = at_ + need;
    return at_;
  }

  /// A free range of `need` bytes, or 0.
  std::uint64_t place(std::uint64_t need) {
    while (!in_flight.empty() && reusable(in_flight.front()))
      in_flight.pop_front();
    if (in_flight.empty()) {
      head = header_bytes;
      return need <= size - header_bytes ? header_bytes : 0;
    }
    auto tail = in_flight.front().offset;
    if (head > tail) {
      // Back to the start as soon as it has room, not at the end: the
      // pages in use stay those of the few blocks in flight. A page not
      // touched before costs a fault and its zeroing on the writer's side
      // and a fault on the reader's (a sync round's replies and pushes
      // went through all 64 MiB of every segment first, ~70 rounds).
      if (need <= tail - header_bytes)
        return header_bytes;
      return need <= size - head ? head : 0;
    }
    return need <= tail - head ? head : 0;
  }
};

void set_enabled(bool v) noexcept {
  on = v;
}

bool enabled() noexcept {
  return on;
}

namespace {

struct writer_registry {
  std::mutex mtx;
  std::map<caf::node_id, std::shared_ptr<channel>> channels;
  bool broken = false; ///< memfd unusable here: never try again
};

writer_registry& writers() {
  static writer_registry r;
  return r;
}

std::shared_ptr<channel> make_channel() {
  auto c = std::make_shared<channel>();
  c->fd = memfd_create(memfd_name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (c->fd < 0)
    return nullptr;
  c->size = segment_bytes;
  if (ftruncate(c->fd, static_cast<off_t>(c->size)) != 0
      || fcntl(c->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
             != 0)
    return nullptr;
  void* p
      = mmap(nullptr, c->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
  if (p == MAP_FAILED)
    return nullptr;
  c->base = static_cast<unsigned char*>(p);
  c->nonce = random_nonce();
  auto& h = c->head_block();
  h.magic = magic;
  h.nonce = c->nonce;
  h.size = c->size;
  h.pid = static_cast<std::uint32_t>(getpid());
  h.read.store(0, std::memory_order_release);
  ++count().segments;
  return c;
}

} // namespace

std::shared_ptr<channel> channel_to(const caf::node_id& node) {
  if (!on || node == caf::none)
    return nullptr;
  auto& r = writers();
  std::lock_guard<std::mutex> lock{r.mtx};
  if (r.broken)
    return nullptr;
  auto i = r.channels.find(node);
  if (i != r.channels.end())
    return i->second;
  auto c = make_channel();
  if (!c) {
    r.broken = true;
    return nullptr;
  }
  r.channels.emplace(node, c);
  return c;
}

bool confirmed(const channel& c) noexcept {
  return const_cast<channel&>(c).head_block().read.load(
             std::memory_order_acquire)
         != 0;
}

segment_id id_of(const channel& c) noexcept {
  return {static_cast<std::uint32_t>(getpid()),
          static_cast<std::uint32_t>(c.fd), c.nonce};
}

namespace {

void fill_ref(channel& c, std::uint64_t at, block_ref& out) {
  out.segment = id_of(c);
  out.offset = at;
  out.bytes = c.at(at).bytes;
  out.generation = c.at(at).generation;
}

/// A tensor's lease of a block (the writer's side).
class lease_hold : public hold {
public:
  lease_hold(std::shared_ptr<channel> c, std::shared_ptr<lease_state> s,
             std::uint64_t at)
      : c_(std::move(c)), s_(std::move(s)), at_(at) {}
  ~lease_hold() override {
    s_->held.store(false, std::memory_order_release);
  }
  std::shared_ptr<channel> c_;
  std::shared_ptr<lease_state> s_;
  std::uint64_t at_;
  std::atomic<bool> sent{false};
};

} // namespace

bool write(channel& c, const void* data, std::uint64_t bytes, block_ref& out) {
  std::lock_guard<std::mutex> lock{c.mtx};
  auto at = c.fill(data, bytes, std::make_shared<lease_state>());
  if (at == 0)
    return false;
  fill_ref(c, at, out);
  ++count().written;
  count().bytes_written += bytes;
  return true;
}

std::shared_ptr<const hold> lease(const std::shared_ptr<channel>& c,
                                  const void* data, std::uint64_t bytes,
                                  const void*& where) {
  if (!c || !confirmed(*c))
    return nullptr;
  auto s = std::make_shared<lease_state>();
  s->held = true;
  s->shipped = false;
  std::lock_guard<std::mutex> lock{c->mtx};
  auto at = c->fill(data, bytes, s);
  if (at == 0)
    return nullptr;
  where = c->base + at + block_header;
  return std::make_shared<lease_hold>(c, std::move(s), at);
}

bool ship(const hold& h, const channel& c, block_ref& out) {
  auto* l = dynamic_cast<const lease_hold*>(&h);
  if (l == nullptr || l->c_.get() != &c)
    return false;
  auto& mine = const_cast<lease_hold&>(*l);
  if (mine.sent.exchange(true))
    return false;
  mine.s_->shipped.store(true, std::memory_order_release);
  fill_ref(*mine.c_, mine.at_, out);
  ++count().written;
  count().bytes_written += out.bytes;
  return true;
}

void count_inline() noexcept {
  ++count().inline_;
}

counters stats() noexcept {
  auto& t = count();
  counters c;
  c.written = t.written;
  c.inline_ = t.inline_;
  c.read = t.read;
  c.refused = t.refused;
  c.bytes_written = t.bytes_written;
  c.bytes_read = t.bytes_read;
  c.segments = t.segments;
  c.mapped = t.mapped;
  return c;
}

} // namespace troupe::messages::shm
