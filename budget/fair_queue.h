// FairQueue: who waits next. Waiting acquires, served fairly.
//
// Waiters are grouped by user and, within a user, by task. Serving goes
// round-robin across users and, within a user, round-robin across that
// user's tasks; within one task it is first come, first served. A task (or
// user) that was just served moves to the back of its rotation, so a task
// with 100 waiting calls cannot starve a task with one, and a busy user
// cannot starve a quiet one of a shared global limit.
//
// Holds only ids; what a waiter asks for is the caller's business. Pure, no
// clock. Loop thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <string>
#include <unordered_map>

namespace brake {

class FairQueue {
 public:
  // Appends waiter `id` (unique) at the back of its task's line.
  void Push(uint64_t id, const std::string& user, const std::string& task);
  // Removes a waiter wherever it is; false when it is not queued.
  bool Remove(uint64_t id);

  // Offers task heads to `try_grant` in fair order: in each pass, every
  // user in turn, each user's tasks in turn until one head is granted (at
  // most one grant per user per pass). A granted head is removed and its
  // task and user move to the back of their rotations; passes repeat until
  // one grants nothing. Returns how many were granted.
  // `try_grant` must not Push or Remove.
  int Serve(const std::function<bool(uint64_t id)>& try_grant);

  // Calls `fn(id)` for the head of every task's line: only heads can be
  // granted next.
  void ForEachHead(const std::function<void(uint64_t id)>& fn) const {
    for (const UserLine& u : users_)
      for (const TaskLine& t : u.tasks) fn(t.ids.front());
  }

  size_t size() const { return where_.size(); }
  bool empty() const { return where_.empty(); }
  // True when `user` has waiters (a new waiting acquire of theirs must
  // queue behind them rather than barge in).
  bool HasWaiters(const std::string& user) const {
    return users_by_name_.count(user) != 0;
  }

 private:
  struct TaskLine {
    std::string task;
    std::deque<uint64_t> ids;
  };
  struct UserLine {
    std::string user;
    std::list<TaskLine> tasks;  // rotation: front is served first
    std::unordered_map<std::string, std::list<TaskLine>::iterator> by_task;
  };
  struct Where {
    std::list<UserLine>::iterator user;
    std::list<TaskLine>::iterator task;
  };

  void DropIfEmpty(std::list<UserLine>::iterator user,
                   std::list<TaskLine>::iterator task);

  std::list<UserLine> users_;  // rotation: front is served first
  std::unordered_map<std::string, std::list<UserLine>::iterator> users_by_name_;
  std::unordered_map<uint64_t, Where> where_;
};

}  // namespace brake
