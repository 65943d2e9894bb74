// LeaseIndex: where each stored open lease lives (chunk id, line), by id.
//
// braked's lease ids are a per-run prefix and a number counting up, so the
// index keeps, per prefix, a ring of positions indexed by the number:
// finding, adding and dropping one costs no hashing and no allocation, and
// the ring's front moves on as the oldest settle. Ids of another shape, or
// too far from their ring, go to an ordinary map. Storage thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace brake::storage {

struct LeasePos {
  int64_t chunk = 0;  // 0: none (chunk ids start at 1)
  uint32_t line = 0;
};

class LeaseIndex {
 public:
  std::optional<LeasePos> Find(std::string_view id) const;
  // Sets `id`'s position; nullopt removes it.
  void Set(std::string_view id, std::optional<LeasePos> pos);
  size_t size() const { return size_; }
  void clear();

 private:
  struct Ring {
    uint64_t base = 0;  // the number of slots.front()
    std::deque<LeasePos> slots;
  };
  // The prefix and number of an id "PREFIX" + decimal (no leading zero, at
  // most 18 digits); false for any other shape.
  static bool Split(std::string_view id, std::string_view* prefix,
                    uint64_t* number);
  Ring* RingOf(std::string_view prefix, bool create);
  // The slot of `number` in `ring`, grown to hold it when `grow`; nullptr
  // when out of reach.
  static LeasePos* Slot(Ring& ring, uint64_t number, bool grow);

  std::unordered_map<std::string, Ring> rings_;  // by prefix
  std::string last_prefix_;  // RingOf's one-entry cache
  Ring* last_ring_ = nullptr;
  std::unordered_map<std::string, LeasePos> other_;
  size_t size_ = 0;
};

}  // namespace brake::storage
